//! Spawning child processes that cannot outlive the test process.
//!
//! Linux delivers the parent-death signal (`PR_SET_PDEATHSIG`) when the *thread* that forked the child exits, not
//! when the process does. Test harnesses run every test on its own short-lived thread, and the shared ZooKeeper
//! instances live in statics whose `Drop` never runs; so every child is forked from one dedicated thread that lives
//! as long as the process. When the test process exits or is killed, that thread dies with it and the kernel
//! SIGKILLs every ZooKeeper we started.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::OnceLock;

struct SpawnRequest {
    command: Command,
    reply: mpsc::Sender<io::Result<Child>>,
}

/// Spawns `command` from the process-lifetime spawner thread with `PR_SET_PDEATHSIG = SIGKILL` armed, so the
/// child is killed when this process ends, even by kill -9 (for any process a test or a harness starts).
///
/// # Errors
/// Those of [`Command::spawn`].
pub fn spawn_tied_to_process(command: Command) -> io::Result<Child> {
    let (reply, result) = mpsc::channel();
    spawner()
        .send(SpawnRequest { command, reply })
        .map_err(|_| io::Error::other("the testkit spawner thread is gone"))?;
    result
        .recv()
        .map_err(|_| io::Error::other("the testkit spawner thread dropped a request"))?
}

fn spawner() -> &'static mpsc::Sender<SpawnRequest> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnRequest>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (requests, inbox) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("zklock-testkit-spawner".into())
            .spawn(move || {
                // The sender lives in a static, so this loop (and the thread) lasts for the whole process.
                for SpawnRequest { mut command, reply } in inbox {
                    arm_parent_death_signal(&mut command);
                    // The requester is gone (it panicked), so nobody owns this child: kill it rather than let it
                    // linger until the process exits.
                    if let Err(mpsc::SendError(Ok(mut orphan))) = reply.send(command.spawn()) {
                        let _ = orphan.kill();
                        let _ = orphan.wait();
                    }
                }
            })
            .expect("cannot start the testkit spawner thread");
        requests
    })
}

/// Makes the child ask the kernel for SIGKILL when the spawner thread (its parent) dies.
#[allow(unsafe_code)]
fn arm_parent_death_signal(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child between fork and exec, where only async-signal-safe work is
    // allowed. It calls prctl(2) and getppid(2), both async-signal-safe, and builds io::Errors from raw errno values,
    // which does not allocate. It touches no locks and no state shared with other threads.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(io::Error::from)?;
            // The parent may have died between fork and prctl; then the signal will never come, so give up now.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from(nix::errno::Errno::ESRCH));
            }
            Ok(())
        });
    }
}
