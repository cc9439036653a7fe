//! Service discovery in curator-x-discovery's layout: registrations kept through expiry with their id, the JSON
//! Curator writes and reads, the watched view and its providers.

use std::collections::BTreeSet;
use std::time::Duration;

use zklock::zookeeper_client::Client;
use zklock::{CacheEvent, ServiceDiscovery, ServiceInstance, Session, SessionEvent, Strategy};
use zklock_testkit::{expire_session, unique_path};

use crate::on_every_server;
use crate::support::*;

/// The fields of curator-x-discovery's `JsonInstanceSerializer` output (Curator 5: `ServiceInstance` through
/// Jackson), as its documentation shows them.
const CURATOR_JSON: &str = r#"{"name":"test","id":"ef0aa8b7-9f52-4b2e-b8a4-2d3b7a1c9e10","address":"10.20.30.40","port":1234,"sslPort":null,"payload":null,"registrationTimeUTC":1325129459728,"serviceType":"STATIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://foo.com","variable":false}]},"enabled":true}"#;

#[test]
fn curators_json_reads_and_ours_has_its_fields() {
    let theirs: ServiceInstance = serde_json::from_str(CURATOR_JSON).unwrap();
    assert_eq!(
        (theirs.name.as_str(), theirs.port, theirs.ssl_port),
        ("test", Some(1234), None)
    );
    assert_eq!(
        (theirs.registration_time_utc, theirs.service_type.as_str()),
        (1_325_129_459_728, "STATIC")
    );
    assert!(theirs.uri_spec.is_some() && theirs.enabled);
    let ours = serde_json::to_value(ServiceInstance::new("api", "10.0.0.5", 8080)).unwrap();
    let keys: BTreeSet<&str> = ours.as_object().unwrap().keys().map(String::as_str).collect();
    let curators: serde_json::Value = serde_json::from_str(CURATOR_JSON).unwrap();
    let expected: BTreeSet<&str> = curators.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, expected, "the same field names");
    assert_eq!(ours["serviceType"], "DYNAMIC");
    assert!(ours["registrationTimeUTC"].is_u64() && ours["port"] == 8080 && ours["sslPort"].is_null());
}

on_every_server! {
    async fn a_registration_comes_back_with_its_id_after_expiry(hosts: &str) {
        let base = unique_path("discovery");
        let connector = Client::connector().with_session_timeout(Duration::from_secs(10));
        let session = eventually("connecting", Session::reconnecting(connector, hosts)).await.unwrap();
        let mut session_events = session.events().unwrap();
        let observer = client(hosts).await;
        let watching = ServiceDiscovery::new(&observer, &base).unwrap();
        let apis = watching.cache("api").unwrap();
        apis.initialized().await.unwrap();
        let mut events = apis.cache().events();
        let instance = ServiceInstance::new("api", "10.0.0.5", 8080).with_payload(serde_json::json!({"zone": "a"}));
        let mut registration = ServiceDiscovery::new(&session, &base).unwrap().register(instance.clone()).unwrap();
        assert!(registration.wait(EVENTUALLY).await.unwrap());
        let found = watching.instances("api").await.unwrap();
        assert_eq!(found, std::slice::from_ref(&instance));
        assert_eq!(watching.names().await.unwrap(), ["api"]);
        let id_created = |e: &CacheEvent, id: &str| matches!(e, CacheEvent::Created(n) if n.path.ends_with(id));
        eventually("the cache to see it", async { while !id_created(&events.next().await.unwrap(), &instance.id) {} }).await;
        assert_eq!(apis.instances(), std::slice::from_ref(&instance));

        expire_session(hosts, session.client()).await;
        eventually("the new session", async {
            while !matches!(session_events.recv().await, Ok(SessionEvent::NewSession { .. })) {}
        })
        .await;
        // Gone with the old session, back on the new one with the same id.
        eventually("it to come back", async { while !id_created(&events.next().await.unwrap(), &instance.id) {} }).await;
        assert_eq!(apis.instances(), std::slice::from_ref(&instance));
        let mut moved = instance.clone();
        moved.port = Some(8081);
        registration.update(moved.clone()).await.unwrap();
        eventually("the update", async {
            while !matches!(events.next().await.unwrap(), CacheEvent::Changed { new, .. } if new.json::<ServiceInstance>().unwrap().port == Some(8081)) {}
        })
        .await;
        registration.unregister().await.unwrap();
        assert!(watching.instances("api").await.unwrap().is_empty());
    }

    async fn providers_pick_among_the_instances(hosts: &str) {
        let base = unique_path("discovery");
        let c = client(hosts).await;
        let discovery = ServiceDiscovery::new(&c, &base).unwrap();
        let mut registrations = Vec::new();
        for port in [1, 2, 3] {
            let registration = discovery.register(ServiceInstance::new("db", "10.0.0.9", port)).unwrap();
            assert!(registration.wait(EVENTUALLY).await.unwrap());
            registrations.push(registration);
        }
        let dbs = discovery.cache("db").unwrap();
        dbs.initialized().await.unwrap();
        assert_eq!(dbs.instances().len(), 3);
        let ports = |strategy| (0..6).map(|_| dbs.pick(strategy).unwrap().port.unwrap()).collect::<Vec<_>>();
        let round = ports(Strategy::RoundRobin);
        assert_eq!(round[..3].iter().collect::<BTreeSet<_>>().len(), 3, "each in turn: {round:?}");
        assert_eq!(round[..3], round[3..], "{round:?}");
        let sticky = ports(Strategy::Sticky);
        assert!(sticky.iter().all(|p| *p == sticky[0]), "{sticky:?}");
        assert!(ports(Strategy::Random).iter().all(|p| [1, 2, 3].contains(p)));
        let err = discovery.register(ServiceInstance::new("a/b", "h", 1)).unwrap_err();
        assert!(matches!(err, zklock::Error::InvalidPath { .. }), "{err:?}");
        for registration in registrations {
            registration.unregister().await.unwrap();
        }
    }
}

/// Registers one instance on a reconnecting session, runs `outage` (a server restart), and checks that the watched
/// view shows the instance once throughout — never two nodes of its id — and once, with its data, afterwards.
async fn one_instance_through(hosts: &str, outage: impl std::future::Future<Output = ()>) {
    let base = unique_path("discovery-restart");
    let connector = Client::connector().with_session_timeout(Duration::from_secs(20));
    let session = eventually("connecting", Session::reconnecting(connector, hosts))
        .await
        .unwrap();
    let instance = ServiceInstance::new("api", "10.0.0.5", 8080);
    let mut registration = ServiceDiscovery::new(&session, &base)
        .unwrap()
        .register(instance.clone())
        .unwrap();
    assert!(registration.wait(EVENTUALLY).await.unwrap());
    let observer = Session::reconnecting(Client::connector(), hosts).await.unwrap();
    let apis = ServiceDiscovery::new(&observer, &base)
        .unwrap()
        .cache("api")
        .unwrap();
    apis.initialized().await.unwrap();
    let mut events = apis.cache().events();
    // Every view a second cache held, counted as its events arrive, until it shows the update made after the
    // restart: the most instances it ever showed.
    let counting = {
        let view = ServiceDiscovery::new(&observer, &base)
            .unwrap()
            .cache("api")
            .unwrap();
        tokio::spawn(async move {
            let (mut events, mut most) = (view.cache().events(), 0);
            while events.next().await.is_some() {
                let now = view.instances();
                most = most.max(now.len());
                if now.iter().any(|i| i.port == Some(8081)) {
                    return most;
                }
            }
            most
        })
    };
    outage.await;
    // A write after the restart, seen by the cache: everything before it has been seen too.
    let mut moved = instance.clone();
    moved.port = Some(8081);
    eventually("the update after the restart", registration.update(moved.clone()))
        .await
        .unwrap();
    eventually("the cache to see it", async {
        while !matches!(events.next().await.unwrap(), CacheEvent::Changed { new, .. } if new.json::<ServiceInstance>().unwrap().port == Some(8081)) {}
    })
    .await;
    assert_eq!(apis.instances(), [moved]);
    let most = eventually("the second cache to see the update", counting)
        .await
        .unwrap();
    assert_eq!(most, 1, "never two instances of one id");
    registration.unregister().await.unwrap();
}

/// Through an embedded server's restart (shut down, started again 2.5 s later on its data and port).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_per_id_through_an_embedded_server_restart() {
    let mut server = RestartableServer::start().await;
    let hosts = server.hosts();
    one_instance_through(&hosts, server.restart()).await;
    server.stop().await;
}

/// Through a standalone ZooKeeper's restart (killed, started again 2.5 s later on its data).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_per_id_through_a_zookeeper_restart() {
    let mut zk = tokio::task::spawn_blocking(|| zklock_testkit::ZooKeeper::standalone().unwrap())
        .await
        .unwrap();
    let hosts = zk.connect_string();
    one_instance_through(&hosts, restart_zookeeper(&mut zk)).await;
}
