//! Random bytes thrown at a live embedded server socket (a bounded number of proptest cases): the server
//! never crashes, and a bystander session keeps being served, its watches included.

use std::net::SocketAddr;

use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zklock_server::{Server, ServerConfig};

use crate::support::WAIT;
use crate::wire::{connect_request, request_frame, Session};

/// What one case sends on a fresh connection.
#[derive(Debug, Clone)]
enum Garbage {
    /// Bytes as they are (often an absurd frame length, sometimes a four-letter word).
    Raw(Vec<u8>),
    /// A well-formed ConnectRequest, then frames with random opcodes and bodies.
    Framed(Vec<(i32, i32, Vec<u8>)>),
    /// A well-formed ConnectRequest, then random bytes.
    AfterHandshake(Vec<u8>),
}

impl Garbage {
    fn bytes(&self) -> Vec<u8> {
        let mut w = Vec::new();
        let handshake = |w: &mut Vec<u8>| {
            let connect = connect_request(0, 30_000, 0, &[0; 16]);
            w.extend_from_slice(&(connect.len() as i32).to_be_bytes());
            w.extend_from_slice(&connect);
        };
        match self {
            Garbage::Raw(bytes) => w.extend_from_slice(bytes),
            Garbage::Framed(frames) => {
                handshake(&mut w);
                for (xid, op, body) in frames {
                    w.extend_from_slice(&request_frame(*xid, *op, body));
                }
            }
            Garbage::AfterHandshake(bytes) => {
                handshake(&mut w);
                w.extend_from_slice(bytes);
            }
        }
        w
    }
}

fn garbage() -> impl Strategy<Value = Garbage> {
    // Opcodes: every real one plus a few unknown ones, so request decoders get random bodies.
    let opcode = prop_oneof![
        proptest::sample::select(vec![
            1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 100, 101, 102, 103,
            104, 105, 106, 107, -11
        ]),
        any::<i32>(),
    ];
    let xid = prop_oneof![Just(1), Just(-2), Just(-4), Just(-8), any::<i32>()];
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..600).prop_map(Garbage::Raw),
        proptest::collection::vec(
            (xid, opcode, proptest::collection::vec(any::<u8>(), 0..200)),
            1..6
        )
        .prop_map(Garbage::Framed),
        proptest::collection::vec(any::<u8>(), 0..600).prop_map(Garbage::AfterHandshake),
    ]
}

/// Sends the garbage, half-closes, and reads whatever comes back until the server closes (bounded).
async fn throw(addr: SocketAddr, g: &Garbage) {
    let mut stream = TcpStream::connect(addr)
        .await
        .expect("the server still accepts connections");
    // The server may close while we write: that is a fine answer to garbage.
    let _ = stream.write_all(&g.bytes()).await;
    let _ = stream.shutdown().await;
    let drained = tokio::time::timeout(WAIT, async {
        let mut chunk = vec![0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        drained.is_ok(),
        "the server neither answered nor closed after {g:?}"
    );
}

#[test]
fn random_bytes_never_break_the_server() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(Server::start(ServerConfig::default()))
        .expect("server starts");
    let addr = server.local_addr();
    // A bystander session with a watch, kept across all cases.
    let bystander = tokio::sync::Mutex::new(runtime.block_on(async {
        let mut s = Session::open(addr, 40_000).await;
        assert_eq!(s.create("/bystander", b"", 0).await, 0);
        s
    }));
    let round = std::sync::atomic::AtomicUsize::new(0);
    let config = ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(g in garbage())| {
        let round = round.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        runtime.block_on(async {
            throw(addr, &g).await;
            let mut bystander = bystander.lock().await;
            // The bystander is still served: a write (its own reply) and a read of it.
            let path = format!("/bystander/r{round}");
            assert_eq!(bystander.create(&path, b"", 0).await, 0, "bystander write after {g:?}");
            let reply = bystander.exists(&path, false).await.expect("bystander read");
            assert_eq!(reply.header.err, 0);
        });
    });
    runtime.block_on(async {
        // New sessions still work, and the server shuts down cleanly.
        let mut fresh = Session::open(addr, 30_000).await;
        assert_eq!(fresh.create("/after-fuzz", b"", 0).await, 0);
        assert!(bystander.lock().await.close().await);
        server.shutdown().await.expect("clean shutdown");
    });
}
