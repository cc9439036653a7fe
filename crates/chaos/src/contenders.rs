//! The contenders: one slot per `--clients`, each running one OS process at a time (a worker, or a `zklock run`
//! process) and starting a new one when the last ended (killed, or its command finished) until the deadline.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use crate::clock::now_ns;

/// How a slot starts its processes.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program and arguments; `{k}` in any argument is replaced by the launch number.
    pub argv: Vec<String>,
    /// Where the processes' stdout and stderr go (appended).
    pub log: PathBuf,
}

/// The slots' current processes, for the nemesis.
#[derive(Default)]
pub struct Contenders {
    pids: Mutex<Vec<Option<u32>>>,
    /// Processes paused right now (a second fault does not pick them: its SIGCONT would end the first early).
    paused: Mutex<Vec<u32>>,
}

/// What one slot did.
#[derive(Debug, Default, Clone)]
pub struct SlotReport {
    /// Exit statuses (the shell's convention) and how often each happened.
    pub exits: BTreeMap<i32, u64>,
    /// Processes that had to be killed because they did not finish in time.
    pub overdue: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The parent of `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

impl Contenders {
    /// `n` empty slots.
    pub fn new(n: usize) -> Contenders {
        Contenders {
            pids: Mutex::new(vec![None; n]),
            paused: Mutex::new(Vec::new()),
        }
    }

    fn running(&self) -> Vec<u32> {
        let paused = lock(&self.paused).clone();
        lock(&self.pids)
            .iter()
            .flatten()
            .copied()
            .filter(|pid| !paused.contains(pid))
            .collect()
    }

    /// Marks `pid` paused (or not).
    pub fn set_paused(&self, pid: u32, paused: bool) {
        let mut list = lock(&self.paused);
        list.retain(|&p| p != pid);
        if paused {
            list.push(pid);
        }
    }

    /// A slot's process to pause: preferably one inside its critical section (`inside`: pids the register saw
    /// enter; for `run` those are commands, so their parent `zklock run` is taken).
    pub fn pick_holder(&self, inside: &[u32], pick: u64) -> Option<u32> {
        let running = self.running();
        let holders: Vec<u32> = inside
            .iter()
            .flat_map(|&pid| [pid, parent_of(pid).unwrap_or(0)])
            .filter(|pid| running.contains(pid))
            .collect();
        let from = if holders.is_empty() { &running } else { &holders };
        from.get((pick % from.len().max(1) as u64) as usize).copied()
    }

    /// `pid` named for the fault record: with its slot while it is a slot's current process.
    pub fn describe(&self, pid: u32) -> String {
        match lock(&self.pids).iter().position(|&p| p == Some(pid)) {
            Some(slot) => format!("pid {pid} (contender {slot})"),
            None => format!("pid {pid}"),
        }
    }

    /// The slot whose current process `pid` is.
    pub fn slot_of(&self, pid: u32) -> Option<usize> {
        lock(&self.pids).iter().position(|&p| p == Some(pid))
    }

    /// Any slot's process.
    pub fn pick_any(&self, pick: u64) -> Option<u32> {
        let running = self.running();
        running
            .get((pick % running.len().max(1) as u64) as usize)
            .copied()
    }

    /// A command running under one of the slots' `zklock run` processes (one inside its section if possible).
    pub fn pick_command(&self, inside: &[u32], pick: u64) -> Option<u32> {
        let running = self.running();
        let commands: Vec<u32> = inside
            .iter()
            .copied()
            .filter(|&pid| parent_of(pid).is_some_and(|parent| running.contains(&parent)))
            .collect();
        commands
            .get((pick % commands.len().max(1) as u64) as usize)
            .copied()
    }

    /// Runs slot `slot` until `until_ns`: starts a process, waits for it, starts the next. A process still running
    /// at `hard_ns` is killed and counted as overdue.
    pub async fn run_slot(&self, slot: usize, launch: Launch, until_ns: u64, hard_ns: u64) -> SlotReport {
        let mut report = SlotReport::default();
        let mut k = 0u64;
        while now_ns() < until_ns {
            k += 1;
            let argv: Vec<String> = launch
                .argv
                .iter()
                .map(|a| a.replace("{k}", &k.to_string()))
                .collect();
            let log = match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&launch.log)
            {
                Ok(log) => log,
                Err(err) => {
                    eprintln!("zklock-chaos: slot {slot}: log {}: {err}", launch.log.display());
                    break;
                }
            };
            let (Ok(out), Ok(err)) = (log.try_clone(), log.try_clone()) else {
                break;
            };
            let mut command = std::process::Command::new(&argv[0]);
            command
                .args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            let mut child = match zklock_testkit::spawn_tied_to_process(command) {
                Ok(child) => child,
                Err(err) => {
                    eprintln!("zklock-chaos: slot {slot}: cannot start {}: {err}", argv[0]);
                    break;
                }
            };
            let pid = child.id();
            lock(&self.pids)[slot] = Some(pid);
            let wait = tokio::task::spawn_blocking(move || child.wait());
            tokio::pin!(wait);
            let remaining = Duration::from_nanos(hard_ns.saturating_sub(now_ns()));
            let status = match tokio::time::timeout(remaining, &mut wait).await {
                Ok(Ok(Ok(status))) => exit_code(status),
                Ok(_) => -1,
                Err(_) => {
                    report.overdue += 1;
                    crate::servers::signal(pid, nix::sys::signal::Signal::SIGCONT);
                    crate::servers::signal(pid, nix::sys::signal::Signal::SIGKILL);
                    let _ = wait.await;
                    -9
                }
            };
            lock(&self.pids)[slot] = None;
            *report.exits.entry(status).or_default() += 1;
            if status != 0 {
                // A failed start (say, the server is down) is retried, but not in a tight loop.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        report
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
