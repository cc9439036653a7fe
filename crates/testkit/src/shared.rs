//! One standalone server and one 3-member ensemble per test process, started on first use and shared by every test
//! in the binary (tests keep apart by using [`crate::unique_path`]).
//!
//! The instances live in statics, so their `Drop` never runs; the parent-death signal armed by
//! [`crate::spawn`] is what takes the JVMs down when the test process ends.

use std::sync::OnceLock;

use crate::zookeeper::ZooKeeper;

/// The shared standalone server (default settings, `tickTime` 2000), started on first call.
///
/// # Panics
/// The server cannot be started (the error says why); later calls panic with the same message at once.
pub fn shared_standalone() -> &'static ZooKeeper {
    static STANDALONE: OnceLock<Result<ZooKeeper, String>> = OnceLock::new();
    shared_zookeeper(&STANDALONE, "standalone", ZooKeeper::standalone)
}

/// The shared 3-member ensemble (default settings, `tickTime` 2000), started on first call. It is shared, so it
/// cannot be killed or restarted; tests that do that start their own with [`ZooKeeper::ensemble`].
///
/// # Panics
/// The ensemble cannot be started (the error says why); later calls panic with the same message at once.
pub fn shared_ensemble() -> &'static ZooKeeper {
    static ENSEMBLE: OnceLock<Result<ZooKeeper, String>> = OnceLock::new();
    shared_zookeeper(&ENSEMBLE, "ensemble", || ZooKeeper::ensemble(3))
}

/// The ZooKeeper in `cell`, started with `start` on first call and shared by every later caller: how a test binary
/// shares a server of its own kind (other settings than the shared standalone's), named `what` in the panic.
///
/// # Panics
/// The server cannot be started (the error says why); later calls panic with the same message at once.
pub fn shared_zookeeper(
    cell: &'static OnceLock<Result<ZooKeeper, String>>,
    what: &str,
    start: impl FnOnce() -> std::io::Result<ZooKeeper>,
) -> &'static ZooKeeper {
    // A failure is remembered, so the other tests of the binary fail fast instead of each waiting for a start-up.
    match cell.get_or_init(|| start().map_err(|e| e.to_string())) {
        Ok(zookeeper) => zookeeper,
        Err(error) => panic!("the shared ZooKeeper {what} failed to start: {error}"),
    }
}
