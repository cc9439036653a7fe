//! The `register` workload: contenders read (after `sync`), write, compare-and-set by version and `multi` on a
//! few znodes, and record every operation with its invocation and completion times in a history file of their
//! own; the campaign then checks the histories for linearizability (`linearizability.rs`).
//!
//! The znodes are `<path>/k0` … `<path>/k3`, created by the campaign with the value `0` before any contender
//! starts (so the model starts from `(0, version 0)`). `multi` joins `k0` and `k1` only, so `k2` and `k3` are
//! searched apart. Every written value is unique (slot, launch, count), so a read names the write it saw.
//!
//! A history file, one line per event, written (one `write` each) before the request is sent and after its
//! answer arrives, so that a killed contender leaves its last operation invoked and unanswered:
//! * `call <n> <ns> read <key>` / `call <n> <ns> txn (set <key> <value> <expected or -1> | check <key> <version>)…`
//! * `ok <n> <ns> read <value> <version>` / `ok <n> <ns> txn <new version of each set>…`
//! * `refused <n> <ns> <index of the step that failed>` (`BadVersion`: nothing applied)
//! * `unknown <n> <ns> <why>` (timeout or lost connection: may have happened, or not).
//! * `session <id> <ns> <negotiated timeout ms>` before the first call on each session.
//!
//! ## Deadlines of unknown operations
//! [`load`] gives each unknown operation the latest time it can have taken effect ([`check_within`]), from what
//! ZooKeeper guarantees: a session's requests are processed in order, and none after the session ended.
//! * A later operation of the same session was answered: the unknown one was processed (or dropped) before it,
//!   so before that answer.
//! * Otherwise the session was given up: the process made a new session (only once the client saw the old one
//!   expired or closed) or it ended (killed, or its time was up; the slot's next process starts after it exited).
//!   Call that moment `E`: the next session line of the process, else the first line of the slot's next process.
//!   The server expires a session at most a session timeout after the last packet it got from it, and no packet
//!   leaves a client after `E`; a packet held up by a fault (a blackholed link, a restarting or paused server, a
//!   full disk) arrives at most a fault's length later. The deadline is `E + 2 × session timeout + 20 s`, well
//!   above that (faults last at most a few seconds to ~10 s); the last process of a slot has none.
//!
//! Why a later *session* is not enough: the client may declare its session expired itself (it could not reach a
//! server within the timeout) while the server still holds it. A deadline too short could only forbid a
//! linearization (a false alarm), never admit a wrong one; too long only costs search.
//!
//! A history written before the session lines is read as one session per process, of 10 s timeout: deadlines
//! that may be too short (a request of an old session could land after the next session's first answer). So a
//! `no` on such a history must be confirmed; a `yes` stands (shorter deadlines only remove linearizations, so a
//! history linearizable with them is linearizable with the true ones).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::Rng;
use zookeeper_client::{Client, CreateMode, MultiWriteError, MultiWriteResult};

use super::{Contender, Turn, Workload};
use crate::clock::now_ns;
use crate::history::{Action, Kind, Op};
use crate::linearizability::{self, check_within, Call, Operation, Outcome, Report, Step};
use crate::worker_args::WorkerArgs;

/// How many znodes.
pub const KEYS: u32 = 4;

/// The znode of `key` under the workload's path.
fn key_path(path: &str, key: u32) -> String {
    format!("{path}/k{key}")
}

/// Creates the workload's znodes (value `0`, version 0) before the contenders start.
pub async fn prepare(connect: &str, path: &str) -> Result<()> {
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(connect)
        .await
        .context("connecting to create the register's znodes")?;
    let options = CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at = format!("{at}/{part}");
        match client.create(&at, b"", &options).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(err) => return Err(err).with_context(|| format!("creating {at}")),
        }
    }
    for key in 0..KEYS {
        client
            .create(&key_path(path, key), b"0", &options)
            .await
            .with_context(|| format!("creating {}", key_path(path, key)))?;
    }
    Ok(())
}

/// One contender process of the `register` workload: an operation per turn, each recorded in `--history`.
#[derive(Default)]
pub struct Register {
    history: Option<std::fs::File>,
    /// The last version this contender saw of each key: what its compare-and-sets expect.
    known: [i32; KEYS as usize],
    operations: u64,
    /// The session the last operation was sent on (its `session` line written).
    session: Option<i64>,
}

impl Workload for Register {
    const RECORDS: bool = false;

    fn open(&mut self, args: &WorkerArgs) -> Result<()> {
        let file = args
            .history
            .as_deref()
            .context("the register workload needs --history")?;
        let history = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .with_context(|| format!("opening {file}"))?;
        self.history = Some(history);
        Ok(())
    }

    /// One operation: `Done` when it was answered (applied or refused), `Idle` when it may or may not have happened.
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let args = cx.args;
        self.operations += 1;
        let n = self.operations;
        let value =
            ((args.client as i64 + 1) << 40) | ((args.launch as i64 & 0xffff) << 24) | (n as i64 & 0xff_ffff);
        let call = choose(&mut cx.rng, &self.known, value);
        let history = self.history.as_mut().expect("opened before the first operation");
        let session = zk.session_id().0;
        if self.session != Some(session) {
            self.session = Some(session);
            let timeout = zk.session_timeout().as_millis();
            line(history, &format!("session {session} {} {timeout}", now_ns()));
        }
        line(history, &format!("call {n} {} {}", now_ns(), encode_call(&call)));
        let outcome = match tokio::time::timeout(cx.timeout, perform(zk, &args.path, &call)).await {
            Ok(outcome) => outcome,
            Err(_) => Err("timed out".to_owned()),
        };
        let at = now_ns();
        let turn = match outcome {
            Ok(Outcome::Read { value, version }) => {
                if let Call::Read { key } = call {
                    self.known[key as usize] = version;
                }
                line(history, &format!("ok {n} {at} read {value} {version}"));
                Turn::Done
            }
            Ok(Outcome::Applied(versions)) => {
                if let Call::Txn(steps) = &call {
                    let sets = steps.iter().filter_map(|s| match s {
                        Step::Set { key, .. } => Some(*key),
                        Step::Check { .. } => None,
                    });
                    for (key, version) in sets.zip(&versions) {
                        self.known[key as usize] = *version;
                    }
                }
                let versions: Vec<String> = versions.iter().map(ToString::to_string).collect();
                line(history, &format!("ok {n} {at} txn {}", versions.join(" ")));
                Turn::Done
            }
            Ok(Outcome::Refused(step)) => {
                line(history, &format!("refused {n} {at} {}", step.unwrap_or(0)));
                Turn::Done
            }
            Ok(Outcome::Unknown) | Err(_) => {
                let why = match outcome {
                    Err(why) => why,
                    Ok(_) => "unknown".to_owned(),
                };
                line(history, &format!("unknown {n} {at} {why}"));
                Turn::Idle
            }
        };
        tokio::time::sleep(Duration::from_millis(cx.rng.gen_range(2..20))).await;
        Ok(turn)
    }
}

/// Appends a line to the history; a history that cannot be written ends the process (status 1): nothing it did
/// after could be judged.
fn line(file: &mut std::fs::File, text: &str) {
    if let Err(err) = file.write_all(format!("{text}\n").as_bytes()) {
        eprintln!("zklock-chaos: writing the history: {err}");
        std::process::exit(1);
    }
}

/// The next operation: 40 % reads, 20 % writes, 25 % compare-and-sets on a random key, 15 % `multi` on `k0` and
/// `k1`.
fn choose(rng: &mut StdRng, known: &[i32; KEYS as usize], value: i64) -> Call {
    let key = rng.gen_range(0..KEYS);
    let expected = Some(known[key as usize]);
    match rng.gen_range(0..100) {
        0..40 => Call::Read { key },
        40..60 => Call::Txn(vec![Step::Set {
            key,
            value,
            expected: None,
        }]),
        60..85 => Call::Txn(vec![Step::Set { key, value, expected }]),
        _ if rng.gen_bool(0.5) => Call::Txn(vec![
            Step::Set {
                key: 0,
                value,
                expected: Some(known[0]),
            },
            Step::Set {
                key: 1,
                value,
                expected: None,
            },
        ]),
        _ => Call::Txn(vec![
            Step::Check {
                key: 0,
                version: known[0],
            },
            Step::Set {
                key: 1,
                value,
                expected: Some(known[1]),
            },
        ]),
    }
}

/// Sends `call`; its outcome (`Err`: no answer, with why).
async fn perform(zk: &Client, path: &str, call: &Call) -> std::result::Result<Outcome, String> {
    match call {
        Call::Read { key } => {
            let at = key_path(path, *key);
            zk.sync(&at).await.map_err(|e| format!("sync: {e}"))?;
            let (data, stat) = zk.get_data(&at).await.map_err(|e| format!("read: {e}"))?;
            let value = std::str::from_utf8(&data)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(-1);
            Ok(Outcome::Read {
                value,
                version: stat.version,
            })
        }
        Call::Txn(steps) => {
            if let [Step::Set { key, value, expected }] = steps.as_slice() {
                // One step: a plain setData, as a write or a compare-and-set is sent by users.
                return match zk
                    .set_data(&key_path(path, *key), value.to_string().as_bytes(), *expected)
                    .await
                {
                    Ok(stat) => Ok(Outcome::Applied(vec![stat.version])),
                    Err(zookeeper_client::Error::BadVersion) => Ok(Outcome::Refused(Some(0))),
                    Err(err) => Err(format!("setData: {err}")),
                };
            }
            let mut multi = zk.new_multi_writer();
            for step in steps {
                let added = match *step {
                    Step::Set { key, value, expected } => {
                        multi.add_set_data(&key_path(path, key), value.to_string().as_bytes(), expected)
                    }
                    Step::Check { key, version } => multi.add_check_version(&key_path(path, key), version),
                };
                added.map_err(|e| format!("building the multi: {e}"))?;
            }
            match multi.commit().await {
                Ok(results) => Ok(Outcome::Applied(
                    results
                        .into_iter()
                        .filter_map(|r| match r {
                            MultiWriteResult::SetData { stat } => Some(stat.version),
                            _ => None,
                        })
                        .collect(),
                )),
                Err(MultiWriteError::OperationFailed {
                    index,
                    source: zookeeper_client::Error::BadVersion,
                }) => Ok(Outcome::Refused(Some(index))),
                Err(err) => Err(format!("multi: {err}")),
            }
        }
    }
}

fn encode_call(call: &Call) -> String {
    match call {
        Call::Read { key } => format!("read {key}"),
        Call::Txn(steps) => {
            let mut text = String::from("txn");
            for step in steps {
                match *step {
                    Step::Set { key, value, expected } => {
                        text += &format!(" set {key} {value} {}", expected.unwrap_or(-1))
                    }
                    Step::Check { key, version } => text += &format!(" check {key} {version}"),
                }
            }
            text
        }
    }
}

fn decode_call(f: &[&str]) -> Option<Call> {
    let num = |s: &str| s.parse::<i64>().ok();
    match f {
        ["read", key] => Some(Call::Read {
            key: key.parse().ok()?,
        }),
        ["txn", rest @ ..] => {
            let mut steps = Vec::new();
            let mut rest = rest;
            loop {
                match rest {
                    [] => break,
                    ["set", key, value, expected, tail @ ..] => {
                        let expected = num(expected)? as i32;
                        steps.push(Step::Set {
                            key: key.parse().ok()?,
                            value: num(value)?,
                            expected: (expected >= 0).then_some(expected),
                        });
                        rest = tail;
                    }
                    ["check", key, version, tail @ ..] => {
                        steps.push(Step::Check {
                            key: key.parse().ok()?,
                            version: num(version)? as i32,
                        });
                        rest = tail;
                    }
                    _ => return None,
                }
            }
            (!steps.is_empty()).then_some(Call::Txn(steps))
        }
        _ => None,
    }
}

/// One process's history: its operations in call order, the session each was sent on, and its sessions (when
/// each began, its timeout in ns).
struct Process {
    ops: Vec<Operation>,
    session_of: Vec<usize>,
    sessions: Vec<(u64, u64)>,
    /// Its first line's time.
    first_ns: Option<u64>,
}

/// What a history without session lines is taken for: one session of this timeout.
const OLD_TIMEOUT_NS: u64 = 10_000_000_000;

/// The grace beyond two session timeouts for a packet held up by a fault (see the module docs).
const GRACE_NS: u64 = 20_000_000_000;

/// Parses one process's history. A torn last line is skipped: a call never fully written was never sent, and an
/// answer never fully written leaves its operation unknown.
fn parse_process(process: &str, text: &str) -> Process {
    let mut ops: BTreeMap<u64, (Operation, usize)> = BTreeMap::new();
    let mut sessions: Vec<(u64, u64)> = Vec::new();
    let mut first_ns = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let ["session", _id, at, timeout_ms] = f[..] {
            if let (Ok(at), Ok(ms)) = (at.parse::<u64>(), timeout_ms.parse::<u64>()) {
                sessions.push((at, ms * 1_000_000));
                first_ns.get_or_insert(at);
            }
            continue;
        }
        let (Some(n), Some(at)) = (
            f.get(1).and_then(|s| s.parse::<u64>().ok()),
            f.get(2).and_then(|s| s.parse::<u64>().ok()),
        ) else {
            continue;
        };
        first_ns.get_or_insert(at);
        match f[0] {
            "call" => {
                if let Some(call) = decode_call(&f[3..]) {
                    let operation = Operation {
                        process: process.to_owned(),
                        call_ns: at,
                        ret_ns: at,
                        call,
                        outcome: Outcome::Unknown,
                    };
                    ops.insert(n, (operation, sessions.len().saturating_sub(1)));
                }
            }
            kind => {
                let Some((op, _)) = ops.get_mut(&n) else { continue };
                let nums: Vec<i64> = f[3..].iter().filter_map(|s| s.parse().ok()).collect();
                let outcome = match (kind, f.get(3).copied(), &op.call) {
                    ("ok", Some("read"), Call::Read { .. }) if nums.len() == 2 => Outcome::Read {
                        value: nums[0],
                        version: nums[1] as i32,
                    },
                    ("ok", Some("txn"), Call::Txn(_)) => {
                        Outcome::Applied(nums.iter().map(|&v| v as i32).collect())
                    }
                    ("refused", _, Call::Txn(_)) if nums.len() == 1 => {
                        Outcome::Refused(Some(nums[0] as usize))
                    }
                    _ => Outcome::Unknown,
                };
                op.ret_ns = at;
                op.outcome = outcome;
            }
        }
    }
    if sessions.is_empty() {
        sessions.push((first_ns.unwrap_or(0), OLD_TIMEOUT_NS));
    }
    let (ops, session_of) = ops.into_values().unzip();
    Process {
        ops,
        session_of,
        sessions,
        first_ns,
    }
}

/// The deadlines of `process`'s operations (see the module docs); `next_ns`: the first line of the slot's next
/// process, if any.
fn deadlines(process: &Process, next_ns: Option<u64>) -> Vec<u64> {
    let mut deadlines = vec![u64::MAX; process.ops.len()];
    // Per session, the answer of the latest-called answered operation seen so far walking backwards.
    let mut answered_after: Vec<Option<u64>> = vec![None; process.sessions.len()];
    for (i, op) in process.ops.iter().enumerate().rev() {
        let s = process.session_of[i];
        if op.outcome != Outcome::Unknown {
            answered_after[s] = Some(op.ret_ns);
            continue;
        }
        deadlines[i] = match answered_after[s] {
            Some(ret) => ret,
            None => {
                let given_up = process.sessions.get(s + 1).map(|&(at, _)| at).or(next_ns);
                given_up.map_or(u64::MAX, |e| {
                    e.saturating_add(2 * process.sessions[s].1)
                        .saturating_add(GRACE_NS)
                })
            }
        };
    }
    deadlines
}

/// The histories of a campaign's directory (every `kv-<slot>-<launch>.history`), with the deadline of each
/// operation ([`check_within`]).
pub fn load(dir: &Path) -> Result<(Vec<Operation>, Vec<u64>)> {
    let mut processes: BTreeMap<(u64, u64), Process> = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(process) = name.strip_prefix("kv-").and_then(|n| n.strip_suffix(".history")) {
            let text = std::fs::read_to_string(&path)?;
            let (slot, launch) = process.split_once('-').unwrap_or((process, "0"));
            let key = (slot.parse().unwrap_or(u64::MAX), launch.parse().unwrap_or(0));
            processes.insert(key, parse_process(process, &text));
        }
    }
    let (mut history, mut all) = (Vec::new(), Vec::new());
    let keys: Vec<(u64, u64)> = processes.keys().copied().collect();
    for (i, key) in keys.iter().enumerate() {
        let next = keys
            .get(i + 1)
            .filter(|k| k.0 == key.0)
            .and_then(|k| processes[k].first_ns);
        let process = &processes[key];
        all.extend(deadlines(process, next));
        history.extend(process.ops.iter().cloned());
    }
    Ok((history, all))
}

/// How many operations got an answer so far, in the histories of `dir` (for the campaign's progress lines).
pub fn answered(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("kv-") && n.ends_with(".history"))
        })
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .map(|text| {
            text.lines()
                .filter(|l| l.starts_with("ok ") || l.starts_with("refused "))
                .count()
        })
        .sum()
}

/// The campaign's judgement: the checker's report on the histories in `dir`, and the acknowledged operations as
/// register records (their completion times, for the operation count and the recovery figures).
pub async fn judge(dir: &Path) -> Result<(Report, Vec<Op>)> {
    let (history, deadlines) = load(dir)?;
    let mut ops: Vec<Op> = history
        .iter()
        .filter(|op| !matches!(op.outcome, Outcome::Unknown))
        .enumerate()
        .map(|(i, op)| Op {
            seq: i as u64,
            at_ns: op.ret_ns,
            client: op
                .process
                .split('-')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
            token: i as i64, // each operation its own "section": recovery counts the first one after a heal
            kind: Kind::Shared,
            action: if matches!(op.call, Call::Read { .. }) {
                Action::Read
            } else {
                Action::Write
            },
            value: 0,
            accepted: true,
            key: 0,
        })
        .collect();
    ops.sort_by_key(|op| op.at_ns);
    for (i, op) in ops.iter_mut().enumerate() {
        op.seq = i as u64;
    }
    let report =
        tokio::task::spawn_blocking(move || check_within(&history, &deadlines, linearizability::MAX_STATES))
            .await
            .context("the linearizability checker failed")?;
    Ok((report, ops))
}

/// `zklock-chaos __check-register DIR`: the verdict on the histories of `DIR` (exit 0 yes, 1 no, 2 unknown).
pub fn check_dir(dir: &Path) -> Result<i32> {
    let (history, deadlines) = load(dir)?;
    let started = std::time::Instant::now();
    let report = check_within(&history, &deadlines, linearizability::MAX_STATES);
    eprintln!("checked in {:.1} s", started.elapsed().as_secs_f64());
    println!("{report}");
    Ok(match report.verdict {
        linearizability::Verdict::Linearizable => 0,
        linearizability::Verdict::NotLinearizable(_) => 1,
        linearizability::Verdict::Unknown(_) => 2,
    })
}
