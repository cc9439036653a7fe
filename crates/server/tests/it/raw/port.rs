//! The client port beyond sessions: four-letter words and their whitelist, and the connect string of a wildcard
//! listen address.

use zklock_server::ServerConfig;

use crate::common::{client, server_with, WAIT};

#[tokio::test]
async fn four_letter_words() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server_with(ServerConfig {
        four_letter_words: vec!["ruok".into(), "envi".into()],
        ..Default::default()
    })
    .await;
    async fn ask(addr: std::net::SocketAddr, cmd: &[u8]) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(cmd).await.unwrap();
        let mut out = String::new();
        tokio::time::timeout(WAIT, s.read_to_string(&mut out))
            .await
            .unwrap()
            .unwrap();
        out
    }
    assert_eq!(ask(server.local_addr(), b"ruok").await, "imok");
    assert!(ask(server.local_addr(), b"envi")
        .await
        .contains("zookeeper.version=3.8.0"));
    assert_eq!(
        ask(server.local_addr(), b"dump").await,
        "dump is not executed because it is not in the whitelist.\n"
    );
    // As in ZooKeeper, which adds srvr to every whitelist.
    assert!(ask(server.local_addr(), b"srvr")
        .await
        .starts_with("Zookeeper version: "));
}

#[tokio::test]
async fn wildcard_listen_reports_a_loopback_connect_string() {
    let server = server_with(ServerConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..Default::default()
    })
    .await;
    let connect = server.connect_string();
    assert_eq!(connect, format!("127.0.0.1:{}", server.local_addr().port()));
    let c = client(&server).await;
    assert!(c.check_stat("/zookeeper").await.unwrap().is_some());
}
