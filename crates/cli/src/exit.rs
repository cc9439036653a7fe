//! How `zklock` exits: the exit statuses, written once, and the [`Failure`] that carries one to `main`.
//!
//! The constants are what the commands return; [`TABLE`] says what each status means for each command, and each
//! command's `--help` shows its part of it ([`help`]). The same table, as the tests check:
//!
//! | status | commands | meaning |
//! |---|---|---|
//! | N | run, elect, register | the command's own exit status, once it has run to its end |
//! | 0 | status, bench, discover | success |
//! | 0 | register | without a command: stopped by SIGINT or SIGTERM (the instance was unregistered) |
//! | 0 | demo | every check of the summary passed |
//! | 0 | serve | stopped by SIGINT, SIGTERM or SIGHUP: clean shutdown, final snapshot written |
//! | 0 | elect | --observe: stopped by SIGINT or SIGTERM, or its reader went away (a closed pipe) |
//! | 0 | revoke | revoked: every node named was deleted (with --request: asked to give up); --dry-run: there is something to revoke |
//! | 0 | reap | success, whether or not there was anything to remove |
//! | 0 | counter | success: the value is printed (get: as it is; set, add: after our change) |
//! | 0 | watch | stopped by SIGINT or SIGTERM (a command running is given the signal and waited for), or its reader went away (a closed pipe) |
//! | 1 | run | the lock is busy (--nonblock: held or queued for; with --leases: no lease free), or --timeout passed; --conflict-exit-code N makes it N (-q: without a message) |
//! | 1 | elect | --nonblock: another candidate leads or is queued ahead; or --timeout passed before we led (either way our candidacy is withdrawn); --conflict-exit-code N makes it N (-q: without a message) |
//! | 1 | status | --check: nobody holds the path (or it does not exist) |
//! | 1 | demo | a check of the summary failed |
//! | 1 | revoke | nothing to revoke: PATH does not exist, nobody holds it, --node names no participant, or the nodes went before we got to them |
//! | 1 | reap | some empty directories could not be removed or looked into: their ACL does not allow it (each is named on stderr) |
//! | 64 | run | usage error: bad arguments, an invalid path, or a path in use by another kind of lock or recipe — zklock's, Curator's or kazoo's — that a run of this kind cannot be ordered with (a mutex, a read/write lock and a semaphore do not exclude each other, so run does not mix them; kazoo's locks are queued behind, not refused), or --leases N beside a semaphore of another number of leases |
//! | 64 | elect | usage error: bad arguments, an invalid path, or a path in use by a lock or another recipe that an election cannot be ordered with |
//! | 64 | status | usage error: bad arguments, or an invalid path |
//! | 64 | demo, bench, serve | usage error: bad arguments |
//! | 64 | revoke | usage error: bad arguments, an invalid path, or PATH is not a lock, a semaphore or an election |
//! | 64 | watch, discover | usage error: bad arguments, or an invalid path |
//! | 64 | register | usage error: bad arguments, an invalid path, an --address that is no HOST:PORT, a --payload that is no JSON, or an --id that cannot be a node name |
//! | 64 | reap | usage error: bad arguments, or an invalid path |
//! | 64 | counter | usage error: bad arguments, an invalid path, a VALUE that does not fit the counter (a shared count holds a 32-bit integer), or PATH is no counter of that kind — other data, a lock's or a queue's directory, any node with children (nothing is changed) |
//! | 69 | run, elect | ZooKeeper cannot be reached or fails |
//! | 69 | status, demo, bench | ZooKeeper (or the embedded server) cannot be reached or fails, or anything else failed |
//! | 69 | revoke | ZooKeeper cannot be reached or fails, or the node's ACL does not let us revoke it |
//! | 69 | reap | ZooKeeper cannot be reached or fails |
//! | 69 | register | ZooKeeper cannot be reached or fails: the instance could not be registered within a session timeout, or not unregistered at the end |
//! | 69 | discover | ZooKeeper cannot be reached or fails (--watch: also the end of the session) |
//! | 69 | watch | ZooKeeper cannot be reached or fails, or refuses the watch (the node's ACL; a server before 3.6 has no persistent watches) |
//! | 69 | counter | ZooKeeper cannot be reached or fails; set, add: also when the session ended before the outcome of the change was known (it happened once or not at all, as the message says) |
//! | 69 | run, elect, status, demo, bench, revoke, reap, counter, watch, register, discover | ZooKeeper refused to authenticate us (a refused SASL handshake: a wrong --sasl password or user; credentials of --auth it does not accept) or requires authentication that was not given (a server requiring SASL and no --sasl), or has no SASL though --sasl was given (it would leave the session without the identity), or names us otherwise than --sasl gssapi:PRINCIPAL; or Kerberos cannot authenticate us (--sasl gssapi: no ticket, no kinit and no --keytab; no KDC; no SERVICE/HOST principal): told on connecting, before anything is done |
//! | 71 | run, elect, register | zklock cannot look after the command (no signal handlers, or waiting for it failed) |
//! | 71 | watch | zklock cannot look after the command (no signal handlers) |
//! | 71 | elect | --metrics ADDR cannot be served (the address is in use, say): nothing was done |
//! | 71 | status, discover | zklock cannot install its signal handlers (status: with --watch) |
//! | 71 | serve | any other failure (bind, unreadable config, a data directory that cannot be written or is not a directory, corrupt data directory) |
//! | 73 | serve | the data directory is in use by another server (it holds the directory's lock file); this one did not start |
//! | 74 | elect | --observe: the output cannot be written |
//! | 74 | watch, discover | the output cannot be written |
//! | 74 | serve | the transaction log cannot be written: no room for it at start, or a write or fsync failed while serving |
//! | 75 | run | the lock (or lease) was lost while the command ran (also: revoked, or a revocation was requested — the lock was then released), or could not be confirmed in time (the servers unreachable for longer than the session timeout tolerates, or zklock paused or starved): the command was stopped |
//! | 75 | elect | leadership was taken away while the command ran (revoked: our node deleted, or a revocation was requested — it was then given up): the command was stopped; with --exit-on-expiry also leadership lost with the session (it expired, or the connection was down too long) or not confirmed in time (zklock paused or starved). Without it zklock stops the command, campaigns again and runs it again |
//! | 126 | run, elect, watch, register | the command cannot be run |
//! | 127 | run, elect, watch, register | the command is not found |
//! | 128+N | run, elect | the command died of signal N; 129/130/131/143: zklock got SIGHUP/SIGINT/SIGQUIT/SIGTERM before the command started |
//! | 128+N | watch | 129/131: zklock got SIGHUP/SIGQUIT |
//! | 128+N | register | the command died of signal N (zklock forwards the signals it gets); without a command, 129/131: zklock got SIGHUP/SIGQUIT |
//!
//! zklock's own failures have the codes of sysexits(3), as flock(1)'s do, above the statuses commands commonly exit
//! with: [`USAGE`] 64 (`EX_USAGE`), [`UNAVAILABLE`] 69 (`EX_UNAVAILABLE`), [`LOCAL_FAILURE`] and [`OS_ERROR`] 71
//! (`EX_OSERR`), [`DIR_IN_USE`] 73 (`EX_CANTCREAT`), [`OUTPUT_FAILURE`] and [`LOG_UNWRITABLE`] 74 (`EX_IOERR`),
//! [`LOST`] 75 (`EX_TEMPFAIL`). The 1s are negative answers (busy, free, nothing to revoke), not failures.
//!
//! Changed in this release: zklock's own failures used 2 (usage), 3 (ZooKeeper unreachable), 4 (lock lost), 5
//! (serve: data directory in use), and 1 for local failures; they are now the sysexits codes 64, 69, 75, 73, 71/74,
//! so that they cannot be mistaken for the command's own status (as flock(1) does). A script that tested
//! `$? -eq 4` tests `$? -eq 75` now.
//!
//! A failure is returned, not printed where it happens: [`Failure`] carries its status and its message, and `main`
//! prints the message once as `zklock: <message>` (`zklock serve: <message>` for `serve`). Lines printed while the
//! command goes on (warnings, "stopping the command") are printed where they happen.

use std::fmt::Write as _;

use Cmd::{Bench, Counter, Demo, Discover, Elect, Reap, Register, Revoke, Run, Serve, Status, Watch};
use Shown::{Code, Own, Signalled};

/// Success.
pub const OK: i32 = 0;
/// `run`: the lock is busy (`--nonblock`), or `--timeout` passed; `elect`: we would not lead at once (`--nonblock`),
/// or `--timeout` passed — unless `--conflict-exit-code` says otherwise.
pub const BUSY: i32 = 1;
/// `demo`: a check of the summary failed.
pub const CHECK_FAILED: i32 = 1;
/// `revoke`: nothing to revoke.
pub const NOTHING_TO_REVOKE: i32 = 1;
/// `reap`: some empty directories could not be removed (their ACL does not allow it).
pub const NOT_ALL_REAPED: i32 = 1;
/// Usage error, clap's too (sysexits `EX_USAGE`).
pub const USAGE: i32 = 64;
/// ZooKeeper cannot be reached, fails, or refuses to authenticate us; for the commands without a child command,
/// any failure but `serve`'s (sysexits `EX_UNAVAILABLE`).
pub const UNAVAILABLE: i32 = 69;
/// `run`, `elect`, `watch`, `register`: zklock cannot look after the command (no signal handlers, or waiting for
/// it failed); `status --watch`, `discover`: no signal handlers (sysexits `EX_OSERR`).
pub const LOCAL_FAILURE: i32 = 71;
/// `serve`: any failure but those with a status of their own: bind, unreadable config, a data directory that
/// cannot be written or is corrupt (sysexits `EX_OSERR`).
pub const OS_ERROR: i32 = 71;
/// `serve`: another server holds the data directory (its lock file cannot be taken); this one did not start
/// (sysexits `EX_CANTCREAT`).
pub const DIR_IN_USE: i32 = 73;
/// `elect --observe`, `watch`, `discover` (and `man`, `completions`): the output cannot be written (sysexits
/// `EX_IOERR`).
pub const OUTPUT_FAILURE: i32 = 74;
/// `serve`: the transaction log cannot be written, at start or while serving (sysexits `EX_IOERR`).
pub const LOG_UNWRITABLE: i32 = 74;
/// `run`, `elect`: the guard was lost while the command ran; the command was stopped (sysexits `EX_TEMPFAIL`).
pub const LOST: i32 = 75;
/// The command cannot be run.
pub const CANNOT_RUN: i32 = 126;
/// The command is not found.
pub const NOT_FOUND: i32 = 127;
/// Added to a signal's number: the command died of it, or it interrupted our wait.
pub const SIGNALLED: i32 = 128;

/// The shell's status for dying of signal number `signal`.
pub fn signalled(signal: i32) -> i32 {
    SIGNALLED + signal
}

/// The subcommands that have exit statuses of their own (the hidden watchdog's is internal, see `child.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    Run,
    Elect,
    Status,
    Demo,
    Bench,
    Serve,
    Revoke,
    Reap,
    Counter,
    Watch,
    Register,
    Discover,
}

/// The status column of a [`Row`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// One status.
    Code(i32),
    /// Whatever the command exited with ("N").
    Own,
    /// [`SIGNALLED`] + the signal's number ("128+N").
    Signalled,
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Code(code) => write!(f, "{code}"),
            Own => f.write_str("N"),
            Signalled => write!(f, "{SIGNALLED}+N"),
        }
    }
}

/// What a status means for some commands.
#[derive(Debug)]
pub struct Row {
    pub status: Shown,
    pub commands: &'static [Cmd],
    pub meaning: &'static str,
}

const fn row(status: Shown, commands: &'static [Cmd], meaning: &'static str) -> Row {
    Row {
        status,
        commands,
        meaning,
    }
}

/// Every exit status of every command, in the order `--help` shows them.
pub const TABLE: &[Row] = &[
    row(Own, &[Run, Elect, Register], "the command's own exit status, once it has run to its end"),
    row(Code(OK), &[Status, Bench, Discover], "success"),
    row(
        Code(OK),
        &[Register],
        "without a command: stopped by SIGINT or SIGTERM (the instance was unregistered)",
    ),
    row(Code(OK), &[Demo], "every check of the summary passed"),
    row(
        Code(OK),
        &[Serve],
        "stopped by SIGINT, SIGTERM or SIGHUP: clean shutdown, final snapshot written",
    ),
    row(
        Code(OK),
        &[Elect],
        "--observe: stopped by SIGINT or SIGTERM, or its reader went away (a closed pipe)",
    ),
    row(
        Code(OK),
        &[Revoke],
        "revoked: every node named was deleted (with --request: asked to give up); --dry-run: there is something \
         to revoke",
    ),
    row(
        Code(OK),
        &[Reap],
        "success, whether or not there was anything to remove",
    ),
    row(
        Code(OK),
        &[Counter],
        "success: the value is printed (get: as it is; set, add: after our change)",
    ),
    row(
        Code(OK),
        &[Watch],
        "stopped by SIGINT or SIGTERM (a command running is given the signal and waited for), or its reader went \
         away (a closed pipe)",
    ),
    row(
        Code(BUSY),
        &[Run],
        "the lock is busy (--nonblock: held or queued for; with --leases: no lease free), or --timeout passed; \
         --conflict-exit-code N makes it N (-q: without a message)",
    ),
    row(
        Code(BUSY),
        &[Elect],
        "--nonblock: another candidate leads or is queued ahead; or --timeout passed before we led (either way \
         our candidacy is withdrawn); --conflict-exit-code N makes it N (-q: without a message)",
    ),
    row(
        Code(CHECK_FAILED),
        &[Status],
        "--check: nobody holds the path (or it does not exist)",
    ),
    row(Code(CHECK_FAILED), &[Demo], "a check of the summary failed"),
    row(
        Code(NOTHING_TO_REVOKE),
        &[Revoke],
        "nothing to revoke: PATH does not exist, nobody holds it, --node names no participant, or the nodes went \
         before we got to them",
    ),
    row(
        Code(NOT_ALL_REAPED),
        &[Reap],
        "some empty directories could not be removed or looked into: their ACL does not allow it (each is named \
         on stderr)",
    ),
    row(
        Code(USAGE),
        &[Run],
        "usage error: bad arguments, an invalid path, or a path in use by another kind of lock or recipe — \
         zklock's, Curator's or kazoo's — that a run of this kind cannot be ordered with (a mutex, a read/write \
         lock and a semaphore do not exclude each other, so run does not mix them; kazoo's locks are queued \
         behind, not refused), or --leases N beside a semaphore of another number of leases",
    ),
    row(
        Code(USAGE),
        &[Elect],
        "usage error: bad arguments, an invalid path, or a path in use by a lock or another recipe that an \
         election cannot be ordered with",
    ),
    row(Code(USAGE), &[Status], "usage error: bad arguments, or an invalid path"),
    row(Code(USAGE), &[Demo, Bench, Serve], "usage error: bad arguments"),
    row(
        Code(USAGE),
        &[Revoke],
        "usage error: bad arguments, an invalid path, or PATH is not a lock, a semaphore or an election",
    ),
    row(
        Code(USAGE),
        &[Watch, Discover],
        "usage error: bad arguments, or an invalid path",
    ),
    row(
        Code(USAGE),
        &[Register],
        "usage error: bad arguments, an invalid path, an --address that is no HOST:PORT, a --payload that is no \
         JSON, or an --id that cannot be a node name",
    ),
    row(
        Code(USAGE),
        &[Reap],
        "usage error: bad arguments, or an invalid path",
    ),
    row(
        Code(USAGE),
        &[Counter],
        "usage error: bad arguments, an invalid path, a VALUE that does not fit the counter (a shared count holds \
         a 32-bit integer), or PATH is no counter of that kind — other data, a lock's or a queue's directory, any \
         node with children (nothing is changed)",
    ),
    row(Code(UNAVAILABLE), &[Run, Elect], "ZooKeeper cannot be reached or fails"),
    row(
        Code(UNAVAILABLE),
        &[Status, Demo, Bench],
        "ZooKeeper (or the embedded server) cannot be reached or fails, or anything else failed",
    ),
    row(
        Code(UNAVAILABLE),
        &[Revoke],
        "ZooKeeper cannot be reached or fails, or the node's ACL does not let us revoke it",
    ),
    row(Code(UNAVAILABLE), &[Reap], "ZooKeeper cannot be reached or fails"),
    row(
        Code(UNAVAILABLE),
        &[Register],
        "ZooKeeper cannot be reached or fails: the instance could not be registered within a session timeout, or \
         not unregistered at the end",
    ),
    row(
        Code(UNAVAILABLE),
        &[Discover],
        "ZooKeeper cannot be reached or fails (--watch: also the end of the session)",
    ),
    row(
        Code(UNAVAILABLE),
        &[Watch],
        "ZooKeeper cannot be reached or fails, or refuses the watch (the node's ACL; a server before 3.6 has no \
         persistent watches)",
    ),
    row(
        Code(UNAVAILABLE),
        &[Counter],
        "ZooKeeper cannot be reached or fails; set, add: also when the session ended before the outcome of the \
         change was known (it happened once or not at all, as the message says)",
    ),
    row(
        Code(UNAVAILABLE),
        &[Run, Elect, Status, Demo, Bench, Revoke, Reap, Counter, Watch, Register, Discover],
        "ZooKeeper refused to authenticate us (a refused SASL handshake: a wrong --sasl password or user; \
         credentials of --auth it does not accept) or requires authentication that was not given (a server \
         requiring SASL and no --sasl), or has no SASL though --sasl was given (it would leave the session \
         without the identity), or names us otherwise than --sasl gssapi:PRINCIPAL; or Kerberos cannot \
         authenticate us (--sasl gssapi: no ticket, no kinit and no --keytab; no KDC; no SERVICE/HOST \
         principal): told on connecting, before anything is done",
    ),
    row(
        Code(LOCAL_FAILURE),
        &[Run, Elect, Register],
        "zklock cannot look after the command (no signal handlers, or waiting for it failed)",
    ),
    row(
        Code(LOCAL_FAILURE),
        &[Watch],
        "zklock cannot look after the command (no signal handlers)",
    ),
    row(
        Code(OS_ERROR),
        &[Elect],
        "--metrics ADDR cannot be served (the address is in use, say): nothing was done",
    ),
    row(
        Code(LOCAL_FAILURE),
        &[Status, Discover],
        "zklock cannot install its signal handlers (status: with --watch)",
    ),
    row(
        Code(OS_ERROR),
        &[Serve],
        "any other failure (bind, unreadable config, a data directory that cannot be written or is not a directory, \
         corrupt data directory)",
    ),
    row(
        Code(DIR_IN_USE),
        &[Serve],
        "the data directory is in use by another server (it holds the directory's lock file); this one did not \
         start",
    ),
    row(
        Code(OUTPUT_FAILURE),
        &[Elect],
        "--observe: the output cannot be written",
    ),
    row(Code(OUTPUT_FAILURE), &[Watch, Discover], "the output cannot be written"),
    row(
        Code(LOG_UNWRITABLE),
        &[Serve],
        "the transaction log cannot be written: no room for it at start, or a write or fsync failed while serving",
    ),
    row(
        Code(LOST),
        &[Run],
        "the lock (or lease) was lost while the command ran (also: revoked, or a revocation was requested — the \
         lock was then released), or could not be confirmed in time (the servers unreachable for longer than the \
         session timeout tolerates, or zklock paused or starved): the command was stopped",
    ),
    row(
        Code(LOST),
        &[Elect],
        "leadership was taken away while the command ran (revoked: our node deleted, or a revocation was requested \
         — it was then given up): the command was stopped; with --exit-on-expiry also leadership lost with the \
         session (it expired, or the connection was down too long) or not confirmed in time (zklock paused or \
         starved). Without it zklock stops the command, campaigns again and runs it again",
    ),
    row(Code(CANNOT_RUN), &[Run, Elect, Watch, Register], "the command cannot be run"),
    row(Code(NOT_FOUND), &[Run, Elect, Watch, Register], "the command is not found"),
    row(
        Signalled,
        &[Run, Elect],
        "the command died of signal N; 129/130/131/143: zklock got SIGHUP/SIGINT/SIGQUIT/SIGTERM before the \
         command started",
    ),
    row(Signalled, &[Watch], "129/131: zklock got SIGHUP/SIGQUIT"),
    row(
        Signalled,
        &[Register],
        "the command died of signal N (zklock forwards the signals it gets); without a command, 129/131: zklock \
         got SIGHUP/SIGQUIT",
    ),
];

/// Where `--help` wraps the meanings.
const HELP_WIDTH: usize = 100;

/// The "Exit status:" section of `command`'s `--help`.
pub fn help(command: Cmd) -> String {
    let rows: Vec<&Row> = TABLE
        .iter()
        .filter(|row| row.commands.contains(&command))
        .collect();
    let labels: Vec<String> = rows.iter().map(|row| row.status.to_string()).collect();
    let width = labels.iter().map(String::len).max().unwrap_or(0);
    let indent = 2 + width + 2;
    let mut text = String::from("Exit status:");
    for (row, label) in rows.iter().zip(&labels) {
        let _ = write!(text, "\n  {label:<width$}  ");
        let mut column = indent;
        for (i, word) in row.meaning.split(' ').enumerate() {
            if i > 0 && column + 1 + word.len() > HELP_WIDTH {
                let _ = write!(text, "\n{:indent$}", "");
                column = indent;
            } else if i > 0 {
                text.push(' ');
                column += 1;
            }
            text.push_str(word);
            column += word.len();
        }
    }
    text
}

/// Why a command ends unsuccessfully: the exit status and what to tell the user (printed once, by `main`).
#[derive(Debug, PartialEq, Eq)]
pub struct Failure {
    pub status: i32,
    pub message: String,
    /// `run`, `elect`: the lock or leadership was not had (busy, or `--timeout` passed): with `-q` the status
    /// alone tells it, and the message is not printed (a cron job mails nothing on a busy run).
    pub conflict: bool,
}

impl Failure {
    pub fn new(status: i32, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            conflict: false,
        }
    }

    /// A [conflict](Failure::conflict): busy or timed out, exiting with `status` ([`BUSY`] or
    /// `--conflict-exit-code`).
    pub fn conflict(status: i32, message: impl Into<String>) -> Failure {
        Failure {
            conflict: true,
            ..Failure::new(status, message)
        }
    }
}

/// A usage error found only once a command runs — an unreadable `--auth-file` or `--tls-ca`, a bad `ZKLOCK_AUTH` —
/// carried in an `anyhow::Error` from where it is found: it becomes a [`USAGE`] failure.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Whatever else goes wrong (connecting, the server, the workers) is [`UNAVAILABLE`]; a [`UsageError`] is a
/// [`USAGE`] failure. (`serve`'s failures are [`Failure::of_serve`].)
impl From<anyhow::Error> for Failure {
    fn from(err: anyhow::Error) -> Failure {
        Failure::classify(&err, UNAVAILABLE)
    }
}

impl Failure {
    /// `serve`'s failure for `err`: [`OS_ERROR`] (it is the server: what fails is this machine's, not a ZooKeeper
    /// far away), or [`USAGE`] for a [`UsageError`].
    pub fn of_serve(err: anyhow::Error) -> Failure {
        Failure::classify(&err, OS_ERROR)
    }

    /// A [`UsageError`] is [`USAGE`]; anything else `otherwise`.
    fn classify(err: &anyhow::Error, otherwise: i32) -> Failure {
        let status = if err.downcast_ref::<UsageError>().is_some() {
            USAGE
        } else {
            otherwise
        };
        Failure::new(status, chain(err))
    }
}

/// An error and its causes, `a: b: c`, each cause once: many errors already show their source in their own text
/// (`cannot bind the client port: Address in use (os error 98)`), and then the source is not repeated.
fn chain(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

/// The result of a command: the exit status, or the failure that ended it.
pub type Result<T = i32> = std::result::Result<T, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    /// [`TABLE`] as the Markdown table in this module's documentation.
    fn markdown() -> String {
        let mut text = String::from("| status | commands | meaning |\n|---|---|---|\n");
        for row in TABLE {
            let commands: Vec<String> = row
                .commands
                .iter()
                .map(|c| format!("{c:?}").to_lowercase())
                .collect();
            let _ = writeln!(
                text,
                "| {} | {} | {} |",
                row.status,
                commands.join(", "),
                row.meaning
            );
        }
        text
    }

    #[test]
    fn the_module_documentation_shows_the_table() {
        let source = include_str!("exit.rs");
        let documented: String = source
            .lines()
            .filter_map(|line| line.strip_prefix("//! |"))
            .map(|line| format!("|{line}\n"))
            .collect();
        assert_eq!(
            documented,
            markdown(),
            "update the table in the module documentation"
        );
    }

    #[test]
    fn every_command_has_its_statuses_in_order() {
        let order = |status: Shown| match status {
            Own => -1,
            Code(code) => code,
            Signalled => SIGNALLED,
        };
        for command in [Run, Elect, Status, Demo, Bench, Serve, Revoke, Reap, Counter] {
            let statuses: Vec<Shown> = TABLE
                .iter()
                .filter(|row| row.commands.contains(&command))
                .map(|row| row.status)
                .collect();
            // `serve` is the server: its failures are this machine's, not ZooKeeper's.
            let failure = if command == Serve { OS_ERROR } else { UNAVAILABLE };
            for status in [Code(USAGE), Code(failure)] {
                assert!(statuses.contains(&status), "{command:?} lacks {status}");
            }
            assert!(
                statuses.is_sorted_by_key(|status| order(*status)),
                "{command:?}: {statuses:?} out of order"
            );
        }
    }

    #[test]
    fn zklocks_own_failures_are_sysexits_codes() {
        // 0, the 1s of a negative answer, and sysexits(3)'s codes: none of the 2 to 63 a command commonly exits with.
        for row in TABLE {
            if let Code(code) = row.status {
                assert!(
                    matches!(code, OK | BUSY | 64..=78 | CANNOT_RUN | NOT_FOUND),
                    "{row:?}"
                );
            }
        }
        // What scripts test: changing one breaks them (see the note in the module documentation).
        assert_eq!(
            [
                USAGE,
                UNAVAILABLE,
                LOCAL_FAILURE,
                OS_ERROR,
                DIR_IN_USE,
                OUTPUT_FAILURE,
                LOG_UNWRITABLE,
                LOST
            ],
            [64, 69, 71, 71, 73, 74, 74, 75]
        );
    }

    #[test]
    fn help_aligns_and_wraps_the_meanings() {
        let help = help(Run);
        assert!(
            help.starts_with("Exit status:\n  N      the command's own exit status, once"),
            "{help}"
        );
        assert!(
            help.contains("\n  128+N  the command died of signal N;"),
            "{help}"
        );
        for line in help.lines().skip(1) {
            assert!(line.chars().count() <= HELP_WIDTH, "too long: {line:?}");
            // Every meaning, and every continuation of one, starts in the column after "  128+N  ".
            assert!(
                line[7..9] == *"  " && !line[9..].starts_with(' '),
                "misaligned: {line:?}"
            );
        }
        assert!(help.contains("\n         "), "a long meaning is wrapped: {help}");
        assert!(!help.contains("summary"), "only run's rows: {help}");
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let bind = std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address in use (os error 98)");
        let err = anyhow::Error::from(zklock_server::Error::Bind(bind)).context("starting the server");
        assert_eq!(
            Failure::of_serve(err),
            Failure::new(
                OS_ERROR,
                "starting the server: cannot bind the client port: Address in use (os error 98)"
            )
        );
        let err = anyhow::anyhow!("refused")
            .context("connecting")
            .context("worker 3");
        assert_eq!(Failure::from(err).message, "worker 3: connecting: refused");
    }
}
