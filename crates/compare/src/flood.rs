//! The `digest` auth flood of issue 33.19, for `compare-servers`: one attacker sends `auth` packets with ever new
//! credentials as fast as the server takes them (reconnecting whenever the server closes its connection), while a
//! bystander session asks `exists /` one request at a time. Measured: the bystander's latencies and the server's
//! own CPU time over the flood.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zklock_codec::frame::{begin_frame, decode_frame, end_frame};
use zklock_codec::{AuthPacket, ConnectRequest, Encode, OpCode, RequestHeader};

use crate::scale::measure::cpu_seconds;

/// What a flood cost.
#[derive(Debug, Clone, Copy)]
pub struct Flood {
    /// The bystander's `exists` latency during the flood, p50, in milliseconds.
    pub p50_ms: f64,
    /// The same, p99.
    pub p99_ms: f64,
    /// The server's CPU seconds over the flood.
    pub server_cpu_s: f64,
    /// Seconds the flood took.
    pub seconds: f64,
    /// Connections the attacker needed (the server closed the others).
    pub connections: usize,
}

/// Auth packets written per batch (one write each batch).
const BATCH: usize = 500;

/// Sends `packets` digest `auth` packets to `addr` (a new credential each) from one connection at a time, a new
/// one whenever the server closes the last, while a bystander session on `hosts` measures `exists /`. At most
/// `rate` packets a second when given; else as fast as the server answers them.
pub async fn auth_flood(
    addr: SocketAddr,
    hosts: &str,
    server_pid: u32,
    packets: usize,
    rate: Option<f64>,
) -> Result<Flood> {
    let bystander = zookeeper_client::Client::connect(hosts)
        .await
        .context("the bystander connects")?;
    let cpu_before = cpu_seconds(server_pid).unwrap_or(f64::NAN);
    let started = Instant::now();
    // The attacker on a thread and runtime of its own: on the load generator's one thread, its encoding and
    // decoding would delay the bystander's requests and be counted as the server's latency.
    let (done, attacking) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let result = runtime
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(attack(addr, packets, rate)));
        let _ = done.send(result);
    });
    tokio::pin!(attacking);
    let mut latencies = Vec::new();
    let connections = loop {
        let asked = Instant::now();
        tokio::select! {
            connections = &mut attacking => break connections.context("the attacker's thread")??,
            answered = bystander.check_stat("/") => {
                answered.context("the bystander's exists")?;
                latencies.push(asked.elapsed());
            }
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_s = cpu_seconds(server_pid).unwrap_or(f64::NAN) - cpu_before;
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    Ok(Flood {
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        server_cpu_s,
        seconds,
        connections,
    })
}

/// The attacker: the number of connections it needed until the server had answered `packets` auth packets (a
/// packet the server never read, its connection closed first, does not count). Each batch is written whole and
/// then its answers read: pipelined, and never far ahead of the server (nor of `rate`).
async fn attack(addr: SocketAddr, packets: usize, rate: Option<f64>) -> Result<usize> {
    let (mut answered, mut connections) = (0, 0);
    let started = tokio::time::Instant::now();
    while answered < packets {
        connections += 1;
        let mut stream = TcpStream::connect(addr).await.context("the attacker connects")?;
        let mut bytes = Vec::new();
        let start = begin_frame(&mut bytes);
        ConnectRequest {
            time_out: 30_000,
            passwd: vec![0; 16],
            ..Default::default()
        }
        .encode(&mut bytes);
        end_frame(&mut bytes, start);
        stream.write_all(&bytes).await.context("the attacker's connect")?;
        let mut replies = Replies::default();
        // The connect response first.
        if replies.read(&mut stream, 1).await? < 1 {
            continue;
        }
        loop {
            let batch = BATCH.min(packets - answered);
            bytes.clear();
            for i in answered..answered + batch {
                let start = begin_frame(&mut bytes);
                RequestHeader {
                    xid: -4,
                    op: OpCode::Auth.into(),
                }
                .encode(&mut bytes);
                AuthPacket {
                    auth_type: 0,
                    scheme: "digest".into(),
                    auth: format!("flood{i}:pw").into_bytes(),
                }
                .encode(&mut bytes);
                end_frame(&mut bytes, start);
            }
            let written = stream.write_all(&bytes).await.is_ok();
            let got = replies.read(&mut stream, batch).await?;
            answered += got;
            if let Some(rate) = rate {
                tokio::time::sleep_until(started + Duration::from_secs_f64(answered as f64 / rate)).await;
            }
            if !written || got < batch || answered >= packets {
                break;
            }
        }
    }
    Ok(connections)
}

/// Frames read from a connection, counted.
#[derive(Default)]
struct Replies {
    buf: Vec<u8>,
}

impl Replies {
    /// Reads until `n` frames have come or the connection ends (or stays silent for 30 s); how many came.
    async fn read(&mut self, stream: &mut TcpStream, n: usize) -> Result<usize> {
        let mut got = 0;
        while got < n {
            while let Some((_, used)) = decode_frame(&self.buf, usize::MAX >> 1).context("a reply frame")? {
                self.buf.drain(..used);
                got += 1;
                if got == n {
                    return Ok(got);
                }
            }
            self.buf.reserve(64 * 1024);
            match tokio::time::timeout(Duration::from_secs(30), stream.read_buf(&mut self.buf)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return Ok(got),
            }
        }
        Ok(got)
    }
}
