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

/// An embedded server's configuration with SASL DIGEST-MD5, read from a zoo.cfg as a deployment would have it:
/// the JAAS file [`crate::Builder::sasl_digest_users`] gives real ZooKeeper (same text, same `users`), named by
/// the zoo.cfg key `java.security.auth.login.config`, `authProvider.1` naming ZooKeeper's SASL provider, and
/// `extra` zoo.cfg lines (e.g. `("sessionRequireClientSASLAuth", "true")`). Listens on 127.0.0.1, a free port;
/// its files (and data) live in `dir`, which the caller keeps as long as the server runs.
///
/// # Panics
/// The zoo.cfg or JAAS file cannot be written or read back.
pub fn embedded_sasl_config(
    dir: &std::path::Path,
    users: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> zklock_server::ServerConfig {
    let users: Vec<(String, String)> = users
        .iter()
        .map(|(user, password)| (user.to_string(), password.to_string()))
        .collect();
    let jaas = dir.join("jaas.conf");
    std::fs::write(&jaas, crate::zookeeper::jaas_server_section(&users)).expect("write the JAAS file");
    let mut cfg = format!(
        "clientPortAddress=127.0.0.1\nclientPort=0\ndataDir={}\n\
         authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
         java.security.auth.login.config={}\n",
        dir.join("data").display(),
        jaas.display()
    );
    for (key, value) in extra {
        cfg.push_str(&format!("{key}={value}\n"));
    }
    let zoo_cfg = dir.join("zoo.cfg");
    std::fs::write(&zoo_cfg, cfg).expect("write zoo.cfg");
    let config = zklock_server::ServerConfig::from_zoo_cfg(&zoo_cfg).expect("the SASL zoo.cfg parses");
    assert!(
        config.ignored.is_empty(),
        "every SASL key applies: {:?}",
        config.ignored
    );
    config
}
