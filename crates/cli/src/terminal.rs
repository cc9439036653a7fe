//! Giving the command the terminal, as a shell gives it to a foreground job (and as `flock` users expect).
//!
//! The command runs in a process group of its own (see `child.rs`). On a terminal that group would be a background
//! job: its first read from the terminal (`read`, a password prompt, `psql`) stops it with SIGTTIN, and it would
//! never see the terminal's Ctrl-C or Ctrl-Z. So when our standard input is our terminal and our process group is
//! its foreground group, the forked child makes its own group the foreground group (`tcsetpgrp`) before `exec`, and
//! we take the terminal back when the command exits or is stopped (Ctrl-Z). With the command in the foreground, the
//! terminal's Ctrl-C reaches the command's group directly, and not `zklock`: nothing is signalled twice. Started in
//! the background (`zklock run … &`), we give the command the terminal once the shell makes us its foreground job
//! (`fg`; see `child.rs`).
//!
//! The terminal only moves between our two groups: to the command's group only while ours has it, and back only
//! while the command's group (alive or not) has it. A shell that took the terminal back in between keeps it.
//! `tcsetpgrp` from a process outside the foreground group raises SIGTTOU, which would stop the caller: each call is
//! made with SIGTTOU blocked in the calling thread — blocked, not ignored, because an ignored disposition would be
//! inherited by the command.

use std::io::IsTerminal as _;
use std::os::fd::BorrowedFd;

use nix::errno::Errno;
use nix::sys::signal::{killpg, pthread_sigmask, SigSet, SigmaskHow, Signal};
use nix::unistd::{getpgrp, tcgetpgrp, tcsetpgrp, Pid};

/// Our standard input, our controlling terminal.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    /// Our process group.
    ours: Pid,
}

impl Terminal {
    /// The terminal, if standard input is our controlling terminal (in the foreground or not).
    pub fn of_stdin() -> Option<Terminal> {
        if !stdin().is_terminal() {
            return None;
        }
        tcgetpgrp(stdin()).ok()?;
        Some(Terminal { ours: getpgrp() })
    }

    /// In the forked child, before `exec`: makes the child's own process group the foreground group, if ours still
    /// is. Only async-signal-safe system calls; allocates nothing.
    pub fn claim_in_child(&self) -> nix::Result<()> {
        hand(self.ours, getpgrp()).map(drop)
    }

    /// Gives the terminal to `group` (the command's) if ours has it; whether it did.
    pub fn give(&self, group: Pid) -> bool {
        match hand(self.ours, group) {
            Ok(handed) => handed,
            Err(err) => {
                tracing::debug!(%err, "giving the terminal to the command");
                false
            }
        }
    }

    /// Takes the terminal back from `group` (the command's) if that has it; whether it did.
    pub fn take_back(&self, group: Pid) -> bool {
        match hand(group, self.ours) {
            Ok(handed) => handed,
            Err(err) => {
                tracing::debug!(%err, "taking the terminal back from the command");
                false
            }
        }
    }

    /// After a failed spawn, whose child may have claimed the terminal before its `exec` failed: takes it back if
    /// its foreground group is not ours and has no process left.
    pub fn take_back_from_the_dead(&self) {
        let Ok(foreground) = tcgetpgrp(stdin()) else {
            return;
        };
        if foreground != self.ours && killpg(foreground, None) == Err(Errno::ESRCH) {
            self.take_back(foreground);
        }
    }
}

/// Standard input, borrowed without going through `std::io::stdin()` (which allocates on first use, and so may not
/// be called in a forked child).
fn stdin() -> BorrowedFd<'static> {
    // SAFETY: fd 0 stays open for the life of the process: nothing in zklock closes it.
    #[allow(unsafe_code)]
    unsafe {
        BorrowedFd::borrow_raw(0)
    }
}

/// Makes `to` the terminal's foreground group if `from` is, with SIGTTOU blocked in this thread; whether it did.
fn hand(from: Pid, to: Pid) -> nix::Result<bool> {
    let mut sigttou = SigSet::empty();
    sigttou.add(Signal::SIGTTOU);
    let mut before = SigSet::empty();
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&sigttou), Some(&mut before))?;
    let handed = match tcgetpgrp(stdin()) {
        Ok(foreground) if foreground == from && from != to => tcsetpgrp(stdin(), to).map(|()| true),
        Ok(_) => Ok(false),
        Err(err) => Err(err),
    };
    pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None)?;
    handed
}
