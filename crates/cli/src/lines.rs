//! The commands that print a line per change until they are stopped (`elect --observe`, `watch`): each line
//! goes out as it is written, and the reader going away (`| head -1`) ends them quietly, with status 0.

use std::io::Write as _;

use crate::exit::{self, Failure};

/// Writes `line` to standard output: `Ok(true)`; `Ok(false)` when the reader is gone (EPIPE), which ends the
/// command as SIGPIPE would, but with status 0 and no message; any other write error is a failure. Not println!,
/// which panics on a failed write. Stdout is line-buffered: the line goes out now.
pub fn write_line(line: &str) -> exit::Result<bool> {
    match writeln!(std::io::stdout(), "{line}") {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(err) => Err(Failure::new(
            exit::OUTPUT_FAILURE,
            format!("cannot write to standard output: {err}"),
        )),
    }
}

/// Milliseconds since the Unix epoch now: when a line's state was seen.
pub fn now_ms() -> u64 {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since_epoch.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Completes once the reader of our standard output has gone away — the read end of its pipe closed, as when
/// `head -1` has had its line — which `poll` reports as an error on the write end. Without it, `--observe` would
/// notice only at its next write, which may be never. A thread of its own waits in `poll` (left behind when the
/// process exits); it never completes when standard output is no pipe (a terminal, a file).
pub async fn reader_gone() {
    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd as _;
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return std::future::pending().await;
    };
    let (gone, said) = tokio::sync::oneshot::channel();
    let watcher = std::thread::Builder::new()
        .name("stdout-reader".to_owned())
        .spawn(move || loop {
            // No events asked for: poll reports only POLLERR (the reader is gone), POLLHUP and POLLNVAL.
            let mut fds = [PollFd::new(fd.as_fd(), PollFlags::empty())];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(0) | Err(Errno::EINTR) => continue,
                Ok(_) if fds[0].revents().is_some_and(|r| r.contains(PollFlags::POLLERR)) => {
                    let _ = gone.send(());
                    return;
                }
                // A terminal hung up, or no descriptor: not a reader going away (and SIGHUP says the former).
                _ => return,
            }
        });
    if watcher.is_err() || said.await.is_err() {
        std::future::pending().await
    }
}
