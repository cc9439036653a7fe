//! The link against a real TCP echo server on 127.0.0.1.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::*;

/// An echo server that also reports every chunk it received; it closes a connection on receiving `"bye"`.
async fn echo() -> (SocketAddr, mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    let _ = tx.send(buf[..n].to_vec());
                    if &buf[..n] == b"bye" {
                        return;
                    }
                    if stream.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, rx)
}

struct Setup {
    link: LinkProxy,
    forward: Arc<Direction>,
    backward: Arc<Direction>,
    received: mpsc::UnboundedReceiver<Vec<u8>>,
}

async fn setup() -> Setup {
    let (upstream, received) = echo().await;
    let (forward, backward) = (Direction::new(), Direction::new());
    let link = LinkProxy::start(&Handle::current(), upstream, forward.clone(), backward.clone()).unwrap();
    Setup {
        link,
        forward,
        backward,
        received,
    }
}

impl Setup {
    /// A new connection through the link.
    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.link.addr()).await.unwrap()
    }

    /// A new connection through the link on which `first` went to the server and came back.
    async fn echoing(&self, first: &[u8]) -> TcpStream {
        let mut client = self.connect().await;
        client.write_all(first).await.unwrap();
        comes_back(&mut client, first).await;
        client
    }
}

/// Asserts that `expected` comes next on `stream`, soon.
async fn comes_back(stream: &mut TcpStream, expected: &[u8]) {
    assert_eq!(
        read_n(stream, expected.len(), SOON).await.as_deref(),
        Some(expected)
    );
}

/// Asserts that nothing comes on `stream` for a while (`SILENCE`), or says `what` did.
async fn nothing_comes(stream: &mut TcpStream, what: &str) {
    assert_eq!(read_n(stream, 1, SILENCE).await, None, "{what}");
}

/// Reads exactly `n` bytes, or `None` if they do not come within `within`.
async fn read_n(stream: &mut TcpStream, n: usize, within: Duration) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(within, stream.read_exact(&mut buf))
        .await
        .ok()
        .map(|r| r.map(|_| buf).expect("read"))
}

const SILENCE: Duration = Duration::from_millis(400);
const SOON: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_passing_link_relays_both_ways() {
    let s = setup().await;
    let _client = s.echoing(b"hello").await;
    assert_eq!((s.forward.delivered(), s.backward.delivered()), (5, 5));
}

#[tokio::test]
async fn a_stopped_link_holds_the_bytes_on_an_open_connection_and_delivers_them_when_healed() {
    let mut s = setup().await;
    let mut client = s.echoing(b"one").await;
    s.forward.set(Condition::Stop);
    s.backward.set(Condition::Stop);
    client.write_all(b"two").await.unwrap();
    client.write_all(b"three").await.unwrap();
    nothing_comes(&mut client, "bytes crossed a stopped link").await;
    s.forward.set(Condition::Pass);
    s.backward.set(Condition::Pass);
    comes_back(&mut client, b"twothree").await;
    assert_eq!(s.received.recv().await.as_deref(), Some(&b"one"[..]));
}

#[tokio::test]
async fn one_way_the_server_hears_the_client_but_its_answers_are_held() {
    let mut s = setup().await;
    let mut client = s.echoing(b"a").await;
    assert_eq!(s.received.recv().await.as_deref(), Some(&b"a"[..]));
    s.backward.set(Condition::Stop);
    client.write_all(b"b").await.unwrap();
    assert_eq!(
        s.received.recv().await.as_deref(),
        Some(&b"b"[..]),
        "the forward way passes"
    );
    nothing_comes(&mut client, "the answer crossed a stopped way").await;
    s.backward.set(Condition::Pass);
    comes_back(&mut client, b"b").await;
}

#[tokio::test]
async fn a_close_is_not_passed_on_while_the_way_is_stopped() {
    let s = setup().await;
    let mut client = s.echoing(b"x").await;
    s.backward.set(Condition::Stop);
    // The server closes its end on "bye".
    client.write_all(b"bye").await.unwrap();
    let mut buf = [0u8; 1];
    let read = tokio::time::timeout(SILENCE, client.read(&mut buf)).await;
    assert!(read.is_err(), "the close crossed a stopped way: {read:?}");
    s.backward.set(Condition::Pass);
    let read = tokio::time::timeout(SOON, client.read(&mut buf))
        .await
        .expect("the close arrives");
    assert_eq!(read.unwrap(), 0);
}

#[tokio::test]
async fn a_new_connection_is_silent_until_both_ways_pass() {
    let mut s = setup().await;
    s.backward.set(Condition::Stop);
    let mut client = s.connect().await;
    client.write_all(b"q").await.unwrap();
    assert!(
        tokio::time::timeout(SILENCE, s.received.recv()).await.is_err(),
        "connected through a half-stopped link"
    );
    s.backward.set(Condition::Pass);
    comes_back(&mut client, b"q").await;
}

#[tokio::test]
async fn a_slow_link_delays_every_chunk_and_keeps_their_order() {
    let s = setup().await;
    let slow = Condition::Slow(Slowness {
        delay: Duration::from_millis(150),
        jitter: Duration::from_millis(50),
        loss: 0.2,
    });
    s.forward.set(slow);
    s.backward.set(slow);
    let mut client = s.connect().await;
    let mut sent = Vec::new();
    for i in 0..8u8 {
        let started = Instant::now();
        client.write_all(&[i]).await.unwrap();
        let back = read_n(&mut client, 1, SOON).await.expect("the echo arrives");
        // Each way at least delay - jitter.
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        sent.push(back[0]);
    }
    assert_eq!(sent, (0..8).collect::<Vec<u8>>());
    // Pipelined chunks keep their order too.
    let burst: Vec<u8> = (0..200).collect();
    for b in &burst {
        client.write_all(&[*b]).await.unwrap();
    }
    assert_eq!(read_n(&mut client, 200, SOON).await, Some(burst));
}
