//! The command line of each contender process: a worker of this binary, a `zklock run` process whose command is
//! this binary, or a foreign contender (kazoo, Curator) of `--mix`.

use std::path::Path;

use crate::args::{CampaignArgs, LostPolicyArg, SessionArg};
use crate::contenders::Launch;
use crate::workloads::foreign::{self, Side, WorkerLine};
use crate::{report, Recipe};

use super::setup::Setup;

/// The connect string of slot `slot`'s processes: its proxy, else its links to the servers, else the servers.
pub(super) fn connect_string(setup: &Setup, slot: usize) -> String {
    let through_links = setup
        .net
        .client_addrs(slot)
        .map(|a| a.iter().map(ToString::to_string).collect::<Vec<_>>().join(","));
    match setup.proxies.get(slot) {
        Some(proxy) => proxy.connect_string(),
        None => through_links.unwrap_or_else(|| setup.direct.clone()),
    }
}

/// How slot `slot` (whose contender is `side`, connecting with `connect`) starts its processes, which stop at
/// `until_ns`.
pub(super) fn launch(
    args: &CampaignArgs,
    setup: &Setup,
    slot: usize,
    side: Side,
    connect: &str,
    until_ns: u64,
) -> Launch {
    match (side, &setup.foreign) {
        (Side::Foreign(peer), Some(foreign)) => Launch {
            argv: foreign.argv(
                peer,
                &WorkerLine {
                    connect,
                    path: &setup.path,
                    register: setup.register.addr().to_string(),
                    client: slot,
                    session_timeout_ms: args.session_timeout * 1000,
                    until_ns,
                    seed: slot_seed(setup.seed, slot),
                    curator_sees_kazoo: args.mix.contains(&foreign::Peer::Kazoo) && !args.stock_curator,
                },
            ),
            log: contender_log(&setup.dir, slot),
        },
        _ => launch_for(args, setup, slot, connect, until_ns),
    }
}

/// The seed of slot `slot`'s processes.
fn slot_seed(seed: u64, slot: usize) -> u64 {
    seed ^ ((slot as u64 + 1) << 32)
}

/// Where slot `slot`'s processes write.
fn contender_log(dir: &Path, slot: usize) -> std::path::PathBuf {
    dir.join(format!("contender-{slot}.log"))
}

/// A slot of zklock's own: `zklock run` processes for the `run` workload, else workers of this binary.
fn launch_for(args: &CampaignArgs, setup: &Setup, slot: usize, connect: &str, until_ns: u64) -> Launch {
    let Setup {
        chaos,
        zklock,
        dir,
        path,
        register,
        seed,
        ..
    } = setup;
    let seed = *seed;
    let s = |v: &dyn ToString| v.to_string();
    let argv = if args.recipe == Recipe::Run {
        let work_ms = 50 + (seed.wrapping_add(slot as u64) % 100);
        vec![
            s(&zklock.display()),
            s(&"run"),
            s(&"--connect"),
            s(&connect),
            s(&"--session-timeout"),
            s(&args.session_timeout),
            s(&"--on-suspend"),
            s(&if args.lost_policy == LostPolicyArg::Suspend {
                "stop"
            } else {
                "kill"
            }),
            s(&"--timeout"),
            s(&(args.session_timeout * 3)),
            s(&path),
            s(&"--"),
            s(&chaos.display()),
            s(&"__command"),
            s(&"--register"),
            s(&register.addr()),
            s(&"--client"),
            s(&slot),
            s(&"--log"),
            s(&dir.join(format!("command-{slot}-{{k}}.log")).display()),
            s(&"--work-ms"),
            s(&work_ms),
            s(&"--long-ms"),
            s(&(args.session_timeout * 1500)),
            s(&"--launch"),
            s(&"{k}"),
        ]
    } else {
        vec![
            s(&chaos.display()),
            s(&"__worker"),
            s(&"--recipe"),
            s(&report::name(args.recipe)),
            s(&"--connect"),
            s(&connect),
            s(&"--path"),
            s(&path),
            s(&"--register"),
            s(&register.addr()),
            s(&"--client"),
            s(&slot),
            s(&"--session-timeout-ms"),
            s(&(args.session_timeout * 1000)),
            s(&"--leases"),
            s(
                &if matches!(args.recipe, Recipe::DoubleBarrier | Recipe::TwoPhaseCommit) {
                    args.clients
                } else {
                    args.leases
                },
            ),
            s(&"--until-ns"),
            s(&until_ns),
            s(&"--seed"),
            s(&slot_seed(seed, slot)),
            s(&"--launch"),
            s(&"{k}"),
        ]
    };
    let mut argv = argv;
    if args.lost_policy == LostPolicyArg::Suspend && args.recipe != Recipe::Run {
        argv.push("--suspend".to_owned());
    }
    if args.session == SessionArg::Reconnecting {
        argv.push("--reconnecting".to_owned());
    }
    if args.mix.contains(&foreign::Peer::Kazoo) {
        argv.push("--kazoo-contenders".to_owned()); // queue behind kazoo's nodes too
    }
    if args.recipe == Recipe::Register {
        argv.push("--history".to_owned());
        argv.push(dir.join(format!("kv-{slot}-{{k}}.history")).display().to_string());
    }
    if args.recipe == Recipe::Cache {
        argv.push("--history".to_owned());
        argv.push(
            dir.join(format!("cache-{slot}-{{k}}.history"))
                .display()
                .to_string(),
        );
    }
    if args.recipe == Recipe::Counter && args.no_fencing {
        argv.push("--naive".to_owned()); // the counter's negative control
    }
    if matches!(args.recipe, Recipe::Group | Recipe::TwoPhaseCommit) && args.no_fencing {
        argv.push("--naive".to_owned()); // their negative controls: report what was wished, not what happened
    }
    if matches!(args.recipe, Recipe::Partitioner | Recipe::PersistentNode) && args.no_fencing {
        argv.push("--naive".to_owned()); // its negative control: the division taken as ownership, no item locks
    }
    if args.recipe == Recipe::Cache && args.cache_watches == crate::args::CacheWatches::OneShot {
        argv.push("--one-shot".to_owned());
    }
    if args.recipe == Recipe::Cache && args.no_fencing {
        argv.push("--naive".to_owned()); // its negative control: a cache that never reads again after a reconnection
    }
    Launch {
        argv,
        log: contender_log(dir, slot),
    }
}
