//! The protected resource: a fenced counter, run by the harness, independent of zklock and of ZooKeeper.
//!
//! Contenders talk to it over TCP on 127.0.0.1, one line per request:
//! * `HELLO <client> <pid>` — who is speaking (the nemesis uses it to find a holder to pause);
//! * `OP <x|s> <token> <read|write|enter|leave> <value> [<key>]` — answered `OK <counter>` or `NO <floor>`. The key
//!   names one of several resources, each with its own fence and counter (the `partitioner`'s items); 0, the
//!   default, is the one resource of every other workload.
//!
//! Every operation, accepted or rejected, is recorded with its token and the time the register handled it. The
//! fence ([`Fence`]) is the only thing between a stale holder and the counter.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::clock::now_ns;
use crate::fence::Fence;
use crate::history::{Action, Kind, Op};

/// The register, serving on 127.0.0.1.
pub struct Register {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

struct State {
    /// The fence every resource starts with.
    fence: Fence,
    /// Per resource (key): its fence and its counter.
    resources: HashMap<u32, (Fence, i64)>,
    ops: Vec<Op>,
    /// Per client: the pid that spoke last and whether its last accepted op opened a section not yet closed.
    clients: HashMap<u32, (u32, bool)>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Register {
    /// Starts serving with `fence`.
    pub async fn start(fence: Fence) -> std::io::Result<Register> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            fence,
            resources: HashMap::new(),
            ops: Vec::new(),
            clients: HashMap::new(),
        }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Ok(Register { addr, state, task })
    }

    /// Where contenders connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every operation so far, in the register's order.
    pub fn ops(&self) -> Vec<Op> {
        lock(&self.state).ops.clone()
    }

    /// How many operations so far.
    pub fn len(&self) -> usize {
        lock(&self.state).ops.len()
    }

    /// Pids of contenders whose last accepted operation left them inside a critical section (a read without its
    /// write yet, or an enter without its leave): the holders worth pausing.
    pub fn inside(&self) -> Vec<u32> {
        lock(&self.state)
            .clients
            .values()
            .filter(|(_, inside)| *inside)
            .map(|(pid, _)| *pid)
            .collect()
    }
}

impl Drop for Register {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(stream: TcpStream, state: Arc<Mutex<State>>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut client = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let reply = handle(&line, &mut client, &state);
        if write.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn handle(line: &str, client: &mut Option<u32>, state: &Mutex<State>) -> String {
    let f: Vec<&str> = line.split_whitespace().collect();
    match f.as_slice() {
        ["HELLO", id, pid] => match (id.parse(), pid.parse()) {
            (Ok(id), Ok(pid)) => {
                *client = Some(id);
                lock(state).clients.insert(id, (pid, false));
                "OK 0\n".to_owned()
            }
            _ => "ERR bad hello\n".to_owned(),
        },
        ["OP", kind, token, action, value, key @ ..] if key.len() <= 1 => {
            let (Some(id), Ok(kind), Ok(token), Ok(action), Ok(value), Ok(key)) = (
                *client,
                kind.parse::<Kind>(),
                token.parse::<i64>(),
                action.parse::<Action>(),
                value.parse::<i64>(),
                key.first().map_or(Ok(0), |key| key.parse::<u32>()),
            ) else {
                return "ERR bad op\n".to_owned();
            };
            let mut s = lock(state);
            let template = s.fence.clone();
            let (fence, counter) = s.resources.entry(key).or_insert((template, 0));
            let accepted = fence.admit(kind, token);
            let value = match (accepted, action) {
                (true, Action::Write) => {
                    *counter = value;
                    value
                }
                (_, Action::Read) => *counter,
                _ => value,
            };
            let (counter, floor) = (*counter, fence.floor(kind));
            let seq = s.ops.len() as u64;
            s.ops.push(Op {
                seq,
                at_ns: now_ns(),
                client: id,
                token,
                kind,
                action,
                value,
                accepted,
                key,
            });
            if accepted {
                let inside = matches!(action, Action::Read | Action::Enter);
                if let Some(entry) = s.clients.get_mut(&id) {
                    entry.1 = inside;
                }
                format!("OK {counter}\n")
            } else {
                format!("NO {floor}\n")
            }
        }
        _ => "ERR unknown request\n".to_owned(),
    }
}

/// A contender's connection to the register.
pub struct Connection {
    lines: tokio::io::Lines<BufReader<tokio::net::tcp::OwnedReadHalf>>,
    write: tokio::net::tcp::OwnedWriteHalf,
}

/// The register's answer to an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Accepted; the counter after it.
    Ok(i64),
    /// Fenced out.
    Rejected,
}

impl Connection {
    /// Connects as `client`.
    pub async fn open(addr: &str, client: u32) -> anyhow::Result<Connection> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (read, write) = stream.into_split();
        let mut conn = Connection {
            lines: BufReader::new(read).lines(),
            write,
        };
        conn.call(&format!("HELLO {client} {}", std::process::id()))
            .await?;
        Ok(conn)
    }

    async fn call(&mut self, line: &str) -> anyhow::Result<String> {
        self.write.write_all(format!("{line}\n").as_bytes()).await?;
        let reply = self
            .lines
            .next_line()
            .await?
            .ok_or_else(|| anyhow::anyhow!("the register closed the connection"))?;
        if reply.starts_with("ERR") {
            anyhow::bail!("register: {reply}");
        }
        Ok(reply)
    }

    /// One operation on the register's one resource (key 0).
    pub async fn op(&mut self, kind: Kind, token: i64, action: Action, value: i64) -> anyhow::Result<Answer> {
        self.op_on(0, kind, token, action, value).await
    }

    /// One operation on resource `key`.
    pub async fn op_on(
        &mut self,
        key: u32,
        kind: Kind,
        token: i64,
        action: Action,
        value: i64,
    ) -> anyhow::Result<Answer> {
        let reply = self
            .call(&format!("OP {kind} {token} {action} {value} {key}"))
            .await?;
        match reply.split_once(' ') {
            Some(("OK", counter)) => Ok(Answer::Ok(counter.parse()?)),
            Some(("NO", _)) => Ok(Answer::Rejected),
            _ => anyhow::bail!("register: unexpected reply {reply:?}"),
        }
    }
}
