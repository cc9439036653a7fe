//! systemd's readiness protocol for the long-running commands, `serve` and `elect` (a unit with `Type=notify`,
//! docs/operations.md): `READY=1` once the command does its job — the server serves; the candidate campaigns —,
//! `STATUS=` what it does now (shown by `systemctl status`), `STOPPING=1` when it shuts down. Without
//! `$NOTIFY_SOCKET` (not started by systemd) nothing is sent. A message that cannot be sent is logged, never fatal:
//! the service goes on, and systemd's start timeout says the rest.

use sd_notify::NotifyState;

/// Startup is over: `READY=1`, with `status`.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// What the command does now.
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// The command shuts down.
pub fn stopping(status: &str) {
    send(&[NotifyState::Stopping, NotifyState::Status(status)]);
}

fn send(states: &[NotifyState<'_>]) {
    if let Err(err) = sd_notify::notify(states) {
        tracing::warn!(%err, "cannot tell systemd (NOTIFY_SOCKET)");
    }
}
