//! The discovery section of `compare-peers` (`--only discovery`, issue 31): service registration and discovery at
//! scale, on the ZooKeeper 3.8 server of the run. Three parts:
//!
//! 1. **Register and discover**: `services × instances` [`ServiceInstance`]s (200 × 50 = 10,000 by default)
//!    registered through [`ServiceDiscovery::register`] on `sessions` reconnecting sessions at once (instance `i`
//!    of every service on session `i % sessions`), timed from the first `register` call until every
//!    [`Registration::wait`] returned. Then a fresh session discovers them: `names()` must list every service and
//!    `instances(name)` every instance of each (the run fails otherwise), read one service after the other and
//!    then all services at once; then a [`ServiceCache`] of every service on that session, timed until all are
//!    initialized, each holding every instance. Beside the times: the CPU seconds of this process and of the server
//!    (`/proc/<pid>/stat`), and this process's resident memory before and after the registrations and the caches.
//! 2. **Convergence**: a [`ServiceCache`] of one service on a session of its own; `updates` sequential
//!    [`Registration::update`]s of one instance (a new payload each) from the session that registered it. For
//!    each, the write's round trip (call → reply) and the time from the call until the cache's event hands out
//!    the new payload. Interleaved with them, on the same server: a plain `setData` of a persistent node (the bare
//!    write round trip) and a plain `getData` from the cache's session (the read every cache does after an event,
//!    since ZooKeeper's notifications carry no data).
//! 3. **Idle cost**: one reconnecting session, through a [`Proxy`] that counts requests by opcode (on a runtime of
//!    its own, as in [`resync`](crate::resync)), keeps `idle_nodes` ephemeral [`PersistentNode`]s; once every node
//!    exists and the counts have stopped moving, the requests the session sends over `idle_seconds`.
//!
//! Every wait is bounded; everything runs against `127.0.0.1`.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::FutureExt;
use zklock::{
    CacheEvent, NodeMode, PersistentNode, Registration, ServiceDiscovery, ServiceInstance, Session,
};
use zklock_codec::OpCode;
use zklock_testkit::Proxy;
use zookeeper_client::{self as zk, Acls, CreateMode};

use crate::scale::measure;

/// What the section does.
#[derive(Debug, Clone)]
pub struct DiscoveryOptions {
    /// Services registered.
    pub services: usize,
    /// Instances of each service.
    pub instances: usize,
    /// Sessions the instances are registered on.
    pub sessions: usize,
    /// Sequential updates whose convergence is measured.
    pub updates: usize,
    /// Persistent nodes of the idle process.
    pub idle_nodes: usize,
    /// Seconds the idle process is watched.
    pub idle_seconds: f64,
}

impl DiscoveryOptions {
    /// Every instance.
    pub fn total(&self) -> usize {
        self.services * self.instances
    }
}

/// A registration, a discovery read, a cache's start or the idle nodes' creation must end within this.
const PHASE_TIMEOUT: Duration = Duration::from_secs(180);

/// An update not seen by the cache within this is counted as missed.
const SEEN_WITHIN: Duration = Duration::from_secs(5);

/// Unmeasured updates before the measured ones.
const WARMUP_UPDATES: usize = 20;

/// The idle counts have settled once no request other than a ping went through for this long.
const QUIET_FOR: Duration = Duration::from_secs(2);

/// How often the counts are looked at while waiting for them to settle.
const SETTLE_POLL: Duration = Duration::from_millis(100);
/// The counts must settle within this.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Session timeout of every session of the section.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// What the section measured.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryRun {
    /// Seconds from the first `register` call to the last one's return.
    pub register_calls: f64,
    /// Seconds from the first `register` call until every registration's node existed.
    pub registered: f64,
    /// CPU seconds of this process and of the server meanwhile.
    pub register_cpu: Option<(f64, f64)>,
    /// This process's resident memory before the first `register` call and once all were registered, MiB.
    pub register_rss: Option<(f64, f64)>,
    /// Services `names()` listed.
    pub names: usize,
    /// Instances `instances()` returned over all services.
    pub discovered: usize,
    /// Seconds for `names()` plus `instances()` of every service, one after the other.
    pub discover_sequential: f64,
    /// Seconds for `names()` plus `instances()` of every service, all at once.
    pub discover_concurrent: f64,
    /// CPU seconds of this process and of the server over both discovery reads.
    pub discover_cpu: Option<(f64, f64)>,
    /// Seconds from the first `cache()` call until every service's cache was initialized.
    pub caches_initialized: f64,
    /// Instances the caches held then, over all services.
    pub cached: usize,
    /// CPU seconds of this process and of the server from the first `cache()` call until all were initialized.
    pub caches_cpu: Option<(f64, f64)>,
    /// This process's resident memory before the first `cache()` call and once all were initialized, MiB.
    pub caches_rss: Option<(f64, f64)>,
    /// Per update: its round trip and call → the cache's event with its payload (`None`: not within 5 s), ms.
    pub updates: Vec<(f64, Option<f64>)>,
    /// The interleaved bare `setData` round trips, ms.
    pub bare_writes: Vec<f64>,
    /// The interleaved bare `getData` round trips from the cache's session, ms.
    pub bare_reads: Vec<f64>,
    /// The idle process: seconds until its nodes existed, until its requests settled after that.
    pub idle_created: f64,
    /// Seconds from "every node exists" until no request but pings for [`QUIET_FOR`].
    pub idle_settled: f64,
    /// Nodes of the idle process that existed at the end (by its own view, and by a listing of another session).
    pub idle_nodes_end: (usize, usize),
    /// Requests of the idle session by opcode: from its start until settled, and over the idle window.
    pub idle_setup: Vec<(OpCode, u64)>,
    /// The idle window's requests by opcode (pings included), in [`OpCode::ALL`] order, only the non-zero ones.
    pub idle_window: Vec<(OpCode, u64)>,
    /// Watch notifications the proxy forwarded during the idle window.
    pub idle_notifications: u64,
    /// The idle window's actual length, s.
    pub idle_window_seconds: f64,
}

fn service_name(s: usize) -> String {
    format!("svc-{s:03}")
}

fn instance_id(s: usize, i: usize) -> String {
    format!("svc-{s:03}-i{i:02}")
}

/// The payload of update `seq`.
fn payload(seq: u64) -> serde_json::Value {
    serde_json::json!({ "seq": seq, "weight": 100 })
}

fn seq_of(instance: &ServiceInstance) -> Option<u64> {
    instance.payload.as_ref()?.get("seq")?.as_u64()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn reconnecting(hosts: &str) -> Result<Session> {
    let connector = zk::Client::connector().with_session_timeout(SESSION_TIMEOUT);
    Ok(Session::reconnecting(connector, hosts).await?)
}

/// CPU seconds of this process and of the server (`None`: not known).
fn cpu(server: Option<u32>) -> Option<(f64, f64)> {
    Some((
        measure::cpu_seconds(std::process::id())?,
        measure::cpu_seconds(server?)?,
    ))
}

/// The CPU seconds spent between two readings of [`cpu`].
fn spent(before: Option<(f64, f64)>, after: Option<(f64, f64)>) -> Option<(f64, f64)> {
    before.zip(after).map(|((p0, s0), (p1, s1))| (p1 - p0, s1 - s0))
}

/// Runs the three parts against the server at `upstream` (connect string `hosts`, process `server`).
pub async fn run(
    hosts: &str,
    upstream: std::net::SocketAddr,
    server: Option<u32>,
    options: &DiscoveryOptions,
) -> Result<DiscoveryRun> {
    if options.services == 0 || options.instances == 0 || options.sessions == 0 || options.updates == 0 {
        bail!("--services, --instances, --reg-sessions and --updates must be at least 1");
    }
    let mut run = DiscoveryRun::default();
    let base = zklock_bench::fresh_path("/compare-peers-services");
    register_and_discover(hosts, &base, server, options, &mut run).await?;
    idle(upstream, options, &mut run).await?;
    Ok(run)
}

/// Parts 1 and 2, on the same registrations.
async fn register_and_discover(
    hosts: &str,
    base: &str,
    server: Option<u32>,
    options: &DiscoveryOptions,
    run: &mut DiscoveryRun,
) -> Result<()> {
    let mut sessions = Vec::with_capacity(options.sessions);
    for _ in 0..options.sessions {
        sessions.push(reconnecting(hosts).await?);
    }
    let discoveries = sessions
        .iter()
        .map(|session| ServiceDiscovery::new(session, base))
        .collect::<zklock::Result<Vec<_>>>()?;

    // 1. Register: every call at once (each starts its node's task), then wait for them all.
    eprintln!(
        "  discovery: registering {} instances ({} services × {}) on {} sessions",
        options.total(),
        options.services,
        options.instances,
        options.sessions
    );
    let rss_before = measure::rss_mib(std::process::id());
    let cpu_before = cpu(server);
    let start = Instant::now();
    let mut registrations: Vec<Registration> = Vec::with_capacity(options.total());
    for s in 0..options.services {
        for i in 0..options.instances {
            let instance = ServiceInstance::new(&service_name(s), "127.0.0.1", 10_000 + i as u16)
                .with_id(&instance_id(s, i))
                .with_payload(payload(0));
            registrations.push(discoveries[i % options.sessions].register(instance)?);
        }
    }
    run.register_calls = start.elapsed().as_secs_f64();
    let deadline = start + PHASE_TIMEOUT;
    for registration in &registrations {
        let left = deadline.saturating_duration_since(Instant::now());
        if !registration.wait(left).await? {
            bail!(
                "{} not registered within {PHASE_TIMEOUT:?}",
                registration.instance().id
            );
        }
    }
    run.registered = start.elapsed().as_secs_f64();
    run.register_cpu = spent(cpu_before, cpu(server));
    run.register_rss = rss_before.zip(measure::rss_mib(std::process::id()));
    eprintln!("  discovery: registered in {:.2} s", run.registered);

    // Discover, on a fresh session: one service after the other, then all at once.
    let reader_session = reconnecting(hosts).await?;
    let reader = ServiceDiscovery::new(&reader_session, base)?;
    let cpu_before = cpu(server);
    let start = Instant::now();
    let names = reader.names().await?;
    let mut found = Vec::with_capacity(names.len());
    for name in &names {
        found.push(reader.instances(name).await?);
    }
    run.discover_sequential = start.elapsed().as_secs_f64();
    check_discovered(options, &names, &found)?;
    run.names = names.len();
    run.discovered = found.iter().map(Vec::len).sum();

    let start = Instant::now();
    let names = reader.names().await?;
    let found = futures::future::try_join_all(names.iter().map(|name| reader.instances(name))).await?;
    run.discover_concurrent = start.elapsed().as_secs_f64();
    run.discover_cpu = spent(cpu_before, cpu(server));
    check_discovered(options, &names, &found)?;
    eprintln!(
        "  discovery: {} services, {} instances discovered: {:.3} s one service after the other, {:.3} s at once",
        run.names, run.discovered, run.discover_sequential, run.discover_concurrent
    );

    // A cache of every service, on the reading session.
    let rss_before = measure::rss_mib(std::process::id());
    let cpu_before = cpu(server);
    let start = Instant::now();
    let caches = names
        .iter()
        .map(|name| reader.cache(name))
        .collect::<zklock::Result<Vec<_>>>()?;
    let deadline = start + PHASE_TIMEOUT;
    for cache in &caches {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, cache.initialized())
            .await
            .context("the service caches' start")??;
    }
    run.caches_initialized = start.elapsed().as_secs_f64();
    run.caches_cpu = spent(cpu_before, cpu(server));
    run.caches_rss = rss_before.zip(measure::rss_mib(std::process::id()));
    run.cached = caches.iter().map(|c| c.instances().len()).sum();
    if let Some((name, cache)) = names
        .iter()
        .zip(&caches)
        .find(|(_, c)| c.instances().len() != options.instances)
    {
        bail!(
            "the cache of {name} holds {} instances, not {}",
            cache.instances().len(),
            options.instances
        );
    }
    eprintln!(
        "  discovery: {} service caches initialized in {:.3} s, holding {} instances",
        caches.len(),
        run.caches_initialized,
        run.cached
    );
    drop(caches);

    // 2. Convergence.
    let (s, i) = (options.services / 2, options.instances / 2);
    let registration = &mut registrations[s * options.instances + i];
    let writer = &sessions[i % options.sessions];
    convergence(hosts, base, writer, registration, options, run).await?;

    // The registrations go with their sessions.
    drop(registrations);
    drop(discoveries);
    let _ = reader_session.close().await;
    for session in sessions {
        let _ = session.close().await;
    }
    Ok(())
}

/// Fails unless every service and every instance was found.
fn check_discovered(
    options: &DiscoveryOptions,
    names: &[String],
    found: &[Vec<ServiceInstance>],
) -> Result<()> {
    let mut expected: Vec<String> = (0..options.services).map(service_name).collect();
    let mut listed = names.to_vec();
    listed.sort();
    expected.sort();
    if listed != expected {
        bail!(
            "names() listed {} services, not the {} registered",
            names.len(),
            options.services
        );
    }
    for (name, instances) in names.iter().zip(found) {
        let s: usize = name.trim_start_matches("svc-").parse()?;
        let mut ids: Vec<&str> = instances.iter().map(|i| i.id.as_str()).collect();
        ids.sort_unstable();
        let expected: Vec<String> = (0..options.instances).map(|i| instance_id(s, i)).collect();
        if ids != expected.iter().map(String::as_str).collect::<Vec<_>>() {
            bail!(
                "instances({name}) returned {} instances, not the {} registered",
                instances.len(),
                options.instances
            );
        }
        if instances.iter().any(|i| &i.name != name) {
            bail!("instances({name}) returned an instance of another service");
        }
    }
    Ok(())
}

/// Part 2: `options.updates` updates of `registration` (on `writer`), each seen by a cache on a session of its
/// own; interleaved with a bare `setData` (on `writer`) and a bare `getData` (on the cache's session).
async fn convergence(
    hosts: &str,
    base: &str,
    writer: &Session,
    registration: &mut Registration,
    options: &DiscoveryOptions,
    run: &mut DiscoveryRun,
) -> Result<()> {
    let watcher = reconnecting(hosts).await?;
    let name = registration.instance().name.clone();
    let path = format!("{base}/{name}/{}", registration.instance().id);
    let cache = ServiceDiscovery::new(&watcher, base)?.cache(&name)?;
    tokio::time::timeout(PHASE_TIMEOUT, cache.initialized())
        .await
        .context("the watching cache's start")??;
    let mut events = cache.cache().events();
    // The content first (a `Created` per node held), then `Initialized`: skipped.
    let skip = async {
        while let Some(event) = events.next().await {
            if event == CacheEvent::Initialized {
                return Ok(());
            }
        }
        bail!("the cache stopped")
    };
    tokio::time::timeout(PHASE_TIMEOUT, skip)
        .await
        .context("the cache's content")??;

    let bare = format!("{base}-bare");
    let create = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.client().create(&bare, b"bare-0000000", &create).await?;

    let mut seq = 0u64;
    for n in 0..WARMUP_UPDATES + options.updates {
        // The bare write and the bare read first.
        let t = Instant::now();
        writer
            .client()
            .set_data(&bare, format!("bare-{n:07}").as_bytes(), None)
            .await?;
        let bare_write = ms(t.elapsed());
        let t = Instant::now();
        watcher.client().get_data(&path).await?;
        let bare_read = ms(t.elapsed());

        seq += 1;
        let instance = registration.instance().clone().with_payload(payload(seq));
        let call = Instant::now();
        let update = async {
            registration.update(instance).await?;
            Ok::<_, anyhow::Error>(call.elapsed())
        };
        let seen = async {
            let wait = async {
                loop {
                    match events.next().await {
                        Some(CacheEvent::Changed { new, .. }) if new.path == path => {
                            let seen = new.json::<ServiceInstance>().ok().and_then(|i| seq_of(&i));
                            if seen.is_some_and(|s| s >= seq) {
                                return Ok(call.elapsed());
                            }
                        }
                        Some(CacheEvent::Reset) => bail!("the cache's subscriber fell behind"),
                        Some(_) => {}
                        None => bail!("the cache stopped"),
                    }
                }
            };
            match tokio::time::timeout(SEEN_WITHIN, wait).await {
                Ok(seen) => seen.map(Some),
                Err(_) => Ok(None),
            }
        };
        let (written, seen) = tokio::try_join!(update, seen)?;
        if n >= WARMUP_UPDATES {
            run.updates.push((ms(written), seen.map(ms)));
            run.bare_writes.push(bare_write);
            run.bare_reads.push(bare_read);
        }
        if seen.is_none() {
            // Whatever comes late for it is passed over by the next update's wait (older payloads).
            for _ in 0..10_000 {
                if events.next().now_or_never().flatten().is_none() {
                    break;
                }
            }
        }
    }
    let view = cache.instances();
    let held = view.iter().find(|i| i.id == registration.instance().id);
    if held.and_then(seq_of) != Some(seq) {
        bail!(
            "the cache's view ends at {:?}, not the last update {seq}",
            held.and_then(seq_of)
        );
    }
    writer.client().delete(&bare, None).await?;
    drop(events);
    drop(cache);
    let _ = watcher.close().await;
    Ok(())
}

fn counts(proxy: &Proxy) -> Vec<u64> {
    OpCode::ALL.iter().map(|&op| proxy.requests(op as i32)).collect()
}

fn diff(after: &[u64], before: &[u64]) -> Vec<(OpCode, u64)> {
    OpCode::ALL
        .iter()
        .zip(after.iter().zip(before))
        .map(|(&op, (a, b))| (op, a - b))
        .filter(|&(_, n)| n > 0)
        .collect()
}

fn non_ping(counts: &[u64]) -> u64 {
    OpCode::ALL
        .iter()
        .zip(counts)
        .filter(|(&op, _)| op != OpCode::Ping)
        .map(|(_, n)| n)
        .sum()
}

/// Part 3: a process keeping `idle_nodes` ephemeral nodes, its requests counted by a proxy.
async fn idle(
    upstream: std::net::SocketAddr,
    options: &DiscoveryOptions,
    run: &mut DiscoveryRun,
) -> Result<()> {
    // The proxy's tasks on a runtime of their own, so that forwarding does not share the client's worker thread.
    let proxy_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("discovery-proxy")
        .enable_all()
        .build()?;
    let proxy = proxy_runtime.spawn(Proxy::start(upstream)).await??;
    let result = idle_through(&proxy, upstream, options, run).await;
    drop(proxy);
    proxy_runtime.shutdown_background();
    result
}

async fn idle_through(
    proxy: &Proxy,
    upstream: std::net::SocketAddr,
    options: &DiscoveryOptions,
    run: &mut DiscoveryRun,
) -> Result<()> {
    let dir = zklock_bench::fresh_path("/compare-peers-idle");
    let before = counts(proxy);
    let session = reconnecting(&proxy.connect_string()).await?;
    eprintln!(
        "  discovery: {} persistent nodes on one session, through a proxy",
        options.idle_nodes
    );
    let start = Instant::now();
    let nodes = (0..options.idle_nodes)
        .map(|n| {
            PersistentNode::start(
                &session,
                &format!("{dir}/n{n:04}"),
                NodeMode::Ephemeral,
                format!("node-{n:04}").as_bytes(),
            )
        })
        .collect::<zklock::Result<Vec<_>>>()?;
    let deadline = start + PHASE_TIMEOUT;
    for node in &nodes {
        let left = deadline.saturating_duration_since(Instant::now());
        if !node.wait_for_initial_create(left).await? {
            bail!("{} not made within {PHASE_TIMEOUT:?}", node.path());
        }
    }
    run.idle_created = start.elapsed().as_secs_f64();

    // Settled: no request but pings for QUIET_FOR.
    let created = Instant::now();
    let mut last = non_ping(&counts(proxy));
    let mut quiet_since = Instant::now();
    loop {
        tokio::time::sleep(SETTLE_POLL).await;
        let now = non_ping(&counts(proxy));
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        } else if quiet_since.elapsed() >= QUIET_FOR {
            break;
        }
        if created.elapsed() > SETTLE_TIMEOUT {
            bail!("the idle session's requests did not settle within {SETTLE_TIMEOUT:?}");
        }
    }
    run.idle_settled = created.elapsed().as_secs_f64();
    let settled = counts(proxy);
    run.idle_setup = diff(&settled, &before);
    eprintln!(
        "  discovery: nodes made in {:.2} s, requests settled {:.1} s later; idle for {:.0} s",
        run.idle_created, run.idle_settled, options.idle_seconds
    );

    // The idle window.
    let notifications = proxy.notifications();
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(options.idle_seconds)).await;
    run.idle_window_seconds = window.elapsed().as_secs_f64();
    run.idle_window = diff(&counts(proxy), &settled);
    run.idle_notifications = proxy.notifications() - notifications;

    // Still there: by the nodes' own view, and listed by another session (not through the proxy).
    let own = nodes.iter().filter(|n| n.exists()).count();
    let other = zklock_bench::connect(&upstream.to_string()).await?;
    let listed = other.list_children(&dir).await?.len();
    run.idle_nodes_end = (own, listed);
    zklock_bench::close(other).await;
    drop(nodes);
    let _ = session.close().await;
    Ok(())
}

/// The nearest-rank percentile `q` of `values`; NaN when there are none.
fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}

fn opcodes(counts: &[(OpCode, u64)]) -> String {
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(op, n)| format!("{op:?} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report, on stdout.
pub fn print_report(options: &DiscoveryOptions, run: &DiscoveryRun) {
    let total = options.total();
    println!(
        "\ndiscovery: {} instances ({} services × {}) registered on {} reconnecting sessions, ServiceDiscovery's \
         layout (an ephemeral PersistentNode per instance)",
        total, options.services, options.instances, options.sessions
    );
    println!("\n| registration and discovery | value |\n|---|---:|");
    println!("| register() calls, s | {:.3} |", run.register_calls);
    println!(
        "| all {total} registered (every node made), s | {:.2} |",
        run.registered
    );
    println!(
        "| ↳ instances registered /s | {:.0} |",
        total as f64 / run.registered
    );
    if let Some((process, server)) = run.register_cpu {
        println!("| ↳ CPU s meanwhile: this process, the server | {process:.1}, {server:.1} |");
    }
    if let Some((before, after)) = run.register_rss {
        println!(
            "| ↳ this process's resident memory before, after, MiB (KiB per instance) | {before:.0}, {after:.0} \
             ({:.1}) |",
            (after - before) * 1024.0 / total as f64
        );
    }
    println!(
        "| discovery, fresh session: names() + instances() of each, one after the other, s | {:.3} |",
        run.discover_sequential
    );
    println!(
        "| ↳ the same, instances() of all services at once, s | {:.3} |",
        run.discover_concurrent
    );
    println!(
        "| ↳ services listed, instances found | {}, {} |",
        run.names, run.discovered
    );
    if let Some((process, server)) = run.discover_cpu {
        println!("| ↳ CPU s over both reads: this process, the server | {process:.2}, {server:.2} |");
    }
    println!(
        "| a ServiceCache of each of the {} services: start → all initialized, s | {:.3} |",
        run.names, run.caches_initialized
    );
    println!("| ↳ instances the caches held | {} |", run.cached);
    if let Some((process, server)) = run.caches_cpu {
        println!("| ↳ CPU s meanwhile: this process, the server | {process:.2}, {server:.2} |");
    }
    if let Some((before, after)) = run.caches_rss {
        println!(
            "| ↳ this process's resident memory before, after, MiB (KiB per cache) | {before:.0}, {after:.0} ({:.1}) \
             |",
            (after - before) * 1024.0 / run.names.max(1) as f64
        );
    }

    let written: Vec<f64> = run.updates.iter().map(|u| u.0).collect();
    let viewed: Vec<f64> = run.updates.iter().filter_map(|u| u.1).collect();
    let gaps: Vec<f64> = run
        .updates
        .iter()
        .filter_map(|&(w, v)| v.map(|v| v - w))
        .collect();
    let missed = run.updates.len() - viewed.len();
    println!(
        "\nconvergence: {} sequential Registration::update()s of one instance (after {WARMUP_UPDATES} unmeasured), \
         a ServiceCache on another session; ms\n",
        run.updates.len()
    );
    println!("| | p50 | p99 | max |\n|---|---:|---:|---:|");
    let row = |label: &str, v: &[f64]| {
        println!(
            "| {label} | {:.3} | {:.3} | {:.3} |",
            percentile(v, 0.5),
            percentile(v, 0.99),
            percentile(v, 1.0)
        );
    };
    row("update's round trip (call → reply)", &written);
    row("view: call → the cache's event with the new payload", &viewed);
    row("view − the same update's round trip", &gaps);
    row("bare setData round trip (interleaved)", &run.bare_writes);
    row(
        "bare getData round trip from the cache's session (interleaved)",
        &run.bare_reads,
    );
    println!("\nupdates not seen within {SEEN_WITHIN:?}: {missed}");

    println!(
        "\nidle: one session keeping {} ephemeral PersistentNodes, through a proxy counting requests",
        options.idle_nodes
    );
    println!(
        "- every node made in {:.2} s; requests settled {:.1} s after that; setup requests: {}",
        run.idle_created,
        run.idle_settled,
        opcodes(&run.idle_setup)
    );
    let window_non_ping: Vec<(OpCode, u64)> = run
        .idle_window
        .iter()
        .copied()
        .filter(|&(op, _)| op != OpCode::Ping)
        .collect();
    let pings: u64 = run
        .idle_window
        .iter()
        .filter(|(op, _)| *op == OpCode::Ping)
        .map(|(_, n)| n)
        .sum();
    println!(
        "- over {:.1} s idle: requests other than pings: {} ({}); pings: {pings}; watch notifications: {}",
        run.idle_window_seconds,
        window_non_ping.iter().map(|(_, n)| n).sum::<u64>(),
        opcodes(&window_non_ping),
        run.idle_notifications
    );
    println!(
        "- nodes there at the end: {} by the nodes' own view, {} listed by another session",
        run.idle_nodes_end.0, run.idle_nodes_end.1
    );

    let (w50, v50) = (percentile(&written, 0.5), percentile(&viewed, 0.5));
    let b50 = percentile(&run.bare_writes, 0.5);
    println!("\ntargets:");
    println!(
        "- {total} instances registered and discovered: {} services listed, {} instances found, {} held by caches: \
         {}",
        run.names,
        run.discovered,
        run.cached,
        verdict(run.names == options.services && run.discovered == total && run.cached == total)
    );
    println!(
        "- view p50 ≤ write round trip p50 + 0.5 ms: {v50:.3} ms against the updates' own {w50:.3} + 0.5 = {:.3} \
         ms: {}; against the bare setData's {b50:.3} + 0.5 = {:.3} ms: {}; {missed} missed",
        w50 + 0.5,
        verdict(v50 <= w50 + 0.5 && missed == 0),
        b50 + 0.5,
        verdict(v50 <= b50 + 0.5 && missed == 0)
    );
    println!(
        "- {} persistent nodes idle, requests other than pings over {:.0} s: {}: {}",
        options.idle_nodes,
        run.idle_window_seconds,
        window_non_ping.iter().map(|(_, n)| n).sum::<u64>(),
        verdict(window_non_ping.is_empty() && run.idle_nodes_end == (options.idle_nodes, options.idle_nodes))
    );
}
