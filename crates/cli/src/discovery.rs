//! `zklock register BASE/NAME --address HOST:PORT [-- CMD]` and `zklock discover BASE/NAME [--json] [--watch]`:
//! service discovery in `curator-x-discovery`'s layout on the command line. A registration lives on a reconnecting
//! session, so it comes back with the same id after expiry; it is removed when the command ends (or, without one, on
//! SIGINT or SIGTERM).

use std::time::Duration;

use nix::sys::signal::Signal;
use zklock::{ServiceDiscovery, ServiceInstance};

use crate::child::Child;
use crate::cli::{DiscoverArgs, RegisterArgs};
use crate::exit::{self, Failure};
use crate::supervise::{self, Interrupts};

/// `BASE/NAME` split at its last `/`: the discovery base and the service's name.
fn split(path: &str) -> exit::Result<(&str, &str)> {
    match path.rsplit_once('/') {
        Some(("", name)) => Ok(("/", name)),
        Some((base, name)) if !name.is_empty() => Ok((base, name)),
        _ => Err(Failure::new(
            exit::USAGE,
            format!("{path} names no service: give BASE/NAME, e.g. /services/api"),
        )),
    }
}

/// Registers the instance, runs the command (or waits for a signal), and unregisters it.
pub async fn register(args: RegisterArgs) -> exit::Result {
    let (base, name) = split(&args.path)?;
    let (host, port) = args
        .address
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
        .ok_or_else(|| Failure::new(exit::USAGE, format!("--address {}: give HOST:PORT", args.address)))?;
    let mut instance = ServiceInstance::new(name, host, port);
    if let Some(id) = &args.id {
        instance = instance.with_id(id);
    }
    if let Some(payload) = &args.payload {
        let payload = serde_json::from_str(payload)
            .map_err(|err| Failure::new(exit::USAGE, format!("--payload is no JSON: {err}")))?;
        instance = instance.with_payload(payload);
    }
    supervise::with_session(&args.connect, async |client, interrupts| {
        let session = crate::zk::reconnecting(client, &args.connect).await?;
        let discovery = ServiceDiscovery::new(&session, base)
            .map_err(|err| Failure::new(exit::USAGE, err.to_string()))?;
        let registration = discovery
            .register(instance.clone())
            .map_err(|err| Failure::new(exit::USAGE, err.to_string()))?;
        let timeout = Duration::from_secs_f64(args.connect.session_timeout.max(1.0));
        if !registration
            .wait(timeout)
            .await
            .map_err(|err| Failure::new(exit::UNAVAILABLE, err.to_string()))?
        {
            return Err(Failure::new(
                exit::UNAVAILABLE,
                format!(
                    "{}/{} was not registered within {timeout:?}",
                    args.path, instance.id
                ),
            ));
        }
        crate::say::info(format_args!("registered {}/{}", args.path, instance.id));
        let result = serve(&args, &instance, interrupts).await;
        registration.unregister().await.map_err(|err| {
            Failure::new(
                exit::UNAVAILABLE,
                format!("unregistering {}/{}: {err}", args.path, instance.id),
            )
        })?;
        drop(discovery);
        crate::zk::close_later(session, client).await;
        result
    })
    .await
}

/// While registered: the command's run (its signals forwarded; its exit status ours), or without one, the wait
/// for SIGINT or SIGTERM (0).
async fn serve(args: &RegisterArgs, instance: &ServiceInstance, interrupts: &mut Interrupts) -> exit::Result {
    if args.command.is_empty() {
        let signal = interrupts.recv().await;
        return match signal {
            Signal::SIGINT | Signal::SIGTERM => Ok(exit::OK),
            signal => Err(supervise::interrupted(
                signal,
                format!("{signal} while registered"),
            )),
        };
    }
    let env = [
        ("ZKLOCK_SERVICE_PATH", format!("{}/{}", args.path, instance.id)),
        ("ZKLOCK_SERVICE_ID", instance.id.clone()),
    ];
    let what = format!("the registration {}/{}", args.path, instance.id);
    let mut child = Child::spawn(&args.command, &env, None, &what, None).map_err(|err| {
        let status = if err.kind() == std::io::ErrorKind::NotFound {
            exit::NOT_FOUND
        } else {
            exit::CANNOT_RUN
        };
        Failure::new(status, format!("cannot run {}: {err}", args.command[0]))
    })?;
    loop {
        tokio::select! {
            status = child.wait() => {
                let status = status.map_err(|err| Failure::new(exit::LOCAL_FAILURE, format!("waiting for the command: {err}")))?;
                return Ok(crate::child::exit_code(status));
            }
            signal = interrupts.next() => child.signal(signal),
        }
    }
}

/// Prints the service's instances; with `--watch`, again after every change.
pub async fn discover(args: DiscoverArgs) -> exit::Result {
    let (base, name) = split(&args.path)?;
    supervise::with_session(&args.connect, async |client, interrupts| {
        let discovery =
            ServiceDiscovery::new(client, base).map_err(|err| Failure::new(exit::USAGE, err.to_string()))?;
        let cache = discovery.cache(name).map_err(|err| Failure::new(exit::USAGE, err.to_string()))?;
        cache.initialized().await.map_err(|err| Failure::new(exit::UNAVAILABLE, format!("{}: {err}", args.path)))?;
        let mut events = cache.cache().events();
        // The content as it is now comes first, as a replay: the first look shows it.
        while !matches!(events.next().await, Some(zklock::CacheEvent::Initialized) | None) {}
        loop {
            if !show(&args, &cache.instances())? || !args.watch {
                return Ok(exit::OK);
            }
            loop {
                let event = tokio::select! {
                    event = events.next() => event,
                    signal = interrupts.recv() => return match signal {
                        Signal::SIGINT | Signal::SIGTERM => Ok(exit::OK),
                        signal => Err(supervise::interrupted(signal, format!("{signal} while watching {}", args.path))),
                    },
                };
                // An instance came, went or changed (not the service's own node, made with the first one).
                let instance = |node: &zklock::CachedNode| node.path != args.path;
                match event {
                    None => return Err(Failure::new(exit::UNAVAILABLE, format!("watching {}: the session ended", args.path))),
                    Some(zklock::CacheEvent::Created(node) | zklock::CacheEvent::Deleted(node)) if instance(&node) => break,
                    Some(zklock::CacheEvent::Changed { old, new }) if instance(&new) && old.data != new.data => break,
                    Some(zklock::CacheEvent::Reset) => break,
                    Some(_) => {}
                }
            }
        }
    })
    .await
}

/// One look: a line per instance (`ID ADDRESS:PORT [payload]`), or with `--json` one JSON array (Curator's
/// instance objects). `false` when the reader has gone away.
fn show(args: &DiscoverArgs, instances: &[ServiceInstance]) -> exit::Result<bool> {
    if args.json {
        let line = serde_json::to_string(instances).unwrap_or_default();
        return crate::lines::write_line(&line);
    }
    if args.watch && !crate::lines::write_line(&format!("{} instance(s) of {}", instances.len(), args.path))?
    {
        return Ok(false);
    }
    for instance in instances {
        let address = format!(
            "{}:{}",
            instance.address.as_deref().unwrap_or("-"),
            instance.port.map_or_else(|| "-".to_owned(), |p| p.to_string())
        );
        let payload = instance
            .payload
            .as_ref()
            .map(|p| format!(" {p}"))
            .unwrap_or_default();
        if !crate::lines::write_line(&format!("{} {address}{payload}", instance.id))? {
            return Ok(false);
        }
    }
    Ok(true)
}
