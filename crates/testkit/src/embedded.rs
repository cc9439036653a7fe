//! The embedded zklock server, shared by every test of a test binary like the real ZooKeeper instances.

use std::sync::OnceLock;

/// The connect string of this test process's embedded server, started on first use.
///
/// The server runs on a runtime of its own, on a thread that lives as long as the process, because every
/// `#[tokio::test]` has a runtime that ends with the test. Its data lives in a fresh directory under the system
/// temporary directory, named after the process, and is left in the system temporary directory when the process exits (statics are never dropped).
pub fn shared_embedded() -> String {
    static CONNECT: OnceLock<String> = OnceLock::new();
    CONNECT
        .get_or_init(|| start_embedded(zklock_server::ServerConfig::default()))
        .clone()
}

/// Starts an embedded server with `config` that serves until the test process exits, as [`shared_embedded`]'s
/// does (on a runtime and a thread of its own), and returns its connect string. For tests that need settings of
/// their own, e.g. a short `container_check_interval`; keep it in a `OnceLock` to share it within a test binary.
/// Blocking.
pub fn start_embedded(config: zklock_server::ServerConfig) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("embedded-zk".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime for the embedded server");
            runtime.block_on(async move {
                let server = zklock_server::Server::start(config)
                    .await
                    .expect("start the embedded server");
                tx.send(server.connect_string()).expect("report the address");
                // Serve until the test process exits.
                std::future::pending::<()>().await;
                drop(server);
            });
        })
        .expect("spawn the embedded server thread");
    rx.recv().expect("the embedded server started")
}
