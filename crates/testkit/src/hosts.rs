//! One test body, run once per server kind: [`on_servers!`](crate::on_servers) and the connect strings of this
//! test binary's shared servers ([`standalone`], [`ensemble`], [`embedded`]).

/// Runs each async test body once per listed server: `name => async fn returning the connect string`. Each body
/// becomes a module with one `#[tokio::test]` per server, named `<test>::<server>`:
///
/// ```ignore
/// zklock_testkit::on_servers! {
///     [standalone => zklock_testkit::hosts::standalone, embedded => zklock_testkit::hosts::embedded]
///     async fn a_lock_is_exclusive(hosts: &str) {
///         // ...
///     }
/// }
/// ```
///
/// Test crates name their usual sets once (`on_every_server!`, …) as one-line macros over this one.
#[macro_export]
macro_rules! on_servers {
    (@one [$($server:ident => $hosts_of:path),+ $(,)?] $name:ident $hosts:ident $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            async fn body($hosts: &str) $body
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $server() {
                    // A failing test shows the library's warnings and session changes (captured: a passing test's
                    // are never printed).
                    $crate::init_tracing();
                    body(&$hosts_of().await).await
                }
            )+
        }
    };
    ($servers:tt $(async fn $name:ident($hosts:ident : &str) $body:block)*) => {$(
        $crate::on_servers!(@one $servers $name $hosts $body);
    )*};
}

/// The connect string of this test binary's shared standalone ZooKeeper (started on first use).
pub async fn standalone() -> String {
    tokio::task::spawn_blocking(|| crate::shared_standalone().connect_string())
        .await
        .expect("start the shared standalone ZooKeeper")
}

/// The connect string of this test binary's shared 3-node ensemble (started on first use).
pub async fn ensemble() -> String {
    tokio::task::spawn_blocking(|| crate::shared_ensemble().connect_string())
        .await
        .expect("start the shared ensemble")
}

/// The connect string of this test binary's shared embedded server (started on first use).
pub async fn embedded() -> String {
    tokio::task::spawn_blocking(crate::shared_embedded)
        .await
        .expect("start the shared embedded server")
}
