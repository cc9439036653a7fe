//! The foreign contenders of the mixed campaign (`--mix kazoo,curator`): kazoo `Lock` workers (Python) and Curator
//! `InterProcessMutex` workers (Java) doing zklock's mutex worker's fenced critical section on the same lock path,
//! judged by the same checker. Their sources (`crates/chaos/peers/`) are built into this binary, written into the
//! campaign's directory and compiled (Java) or checked (Python imports kazoo) before the campaign starts; a missing
//! python3 + kazoo or java + javac + Curator jars fails the campaign (exit 2), never a silent fallback.

use std::path::Path;

use anyhow::{Context, Result};

/// A foreign client library whose workers join the mutex campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Peer {
    /// kazoo's `Lock` (Python), with `extra_lock_patterns=("-lock-",)`; zklock's workers then queue behind its
    /// nodes too (`with_kazoo_contenders(true)`).
    Kazoo,
    /// Curator's `InterProcessMutex` (Java). Beside kazoo, with a lock driver that sorts kazoo's nodes by their
    /// sequence number (stock Curator sorts them after every sequence number, so it does not queue behind kazoo);
    /// `--stock-curator` keeps the stock driver.
    Curator,
}

/// The peer's name on the command line.
pub fn name(peer: Peer) -> &'static str {
    match peer {
        Peer::Kazoo => "kazoo",
        Peer::Curator => "curator",
    }
}

/// What runs in a contender slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// zklock-chaos's own worker.
    Zklock,
    /// A foreign worker.
    Foreign(Peer),
}

/// The side of `slot`: each peer of `mix` in turn, then zklock, round and round (`--clients 3 --mix kazoo,curator`:
/// one of each; `--clients 2 --mix kazoo,curator`: kazoo and Curator alone).
pub fn side(mix: &[Peer], slot: usize) -> Side {
    mix.get(slot % (mix.len() + 1))
        .map_or(Side::Zklock, |&peer| Side::Foreign(peer))
}

const KAZOO_WORKER: &str = include_str!("../../peers/kazoo_worker.py");
const CURATOR_WORKER: &str = include_str!("../../peers/CuratorWorker.java");

/// The prepared foreign workers: how to start each.
pub struct Foreign {
    /// `python3 -u <dir>/kazoo_worker.py`.
    kazoo: Option<Vec<String>>,
    /// `java <flags> -cp <classes:jars> CuratorWorker`.
    curator: Option<Vec<String>>,
}

/// What every worker is told, in the order the foreign workers read it.
pub struct WorkerLine<'a> {
    pub connect: &'a str,
    pub path: &'a str,
    pub register: String,
    pub client: usize,
    pub session_timeout_ms: u64,
    pub until_ns: u64,
    pub seed: u64,
    /// Curator's workers sort kazoo's nodes by their sequence number (else: Curator's stock driver).
    pub curator_sees_kazoo: bool,
}

impl Foreign {
    /// Writes the sources of the peers in `mix` into `dir/peers`, compiles the Java one and checks that Python
    /// imports kazoo. Blocking (a few seconds of `javac`).
    pub fn prepare(mix: &[Peer], dir: &Path) -> Result<Foreign> {
        let peers = dir.join("peers");
        std::fs::create_dir_all(&peers)?;
        let mut foreign = Foreign {
            kazoo: None,
            curator: None,
        };
        if mix.contains(&Peer::Kazoo) {
            let python = zklock_testkit::peers::kazoo_python()
                .map_err(anyhow::Error::msg)
                .context(
                    "--mix kazoo needs Python 3 with kazoo >= 2.7.1 (`python3 -m pip install kazoo`, or set \
                 ZKLOCK_TEST_PYTHON)",
                )?;
            // kazoo's Lock takes extra_lock_patterns from 2.7.1 on; an older kazoo could not queue behind us.
            let check = std::process::Command::new(&python)
                .args([
                    "-c",
                    "import inspect, kazoo.recipe.lock as l; \
                     assert 'extra_lock_patterns' in inspect.signature(l.Lock.__init__).parameters",
                ])
                .output()
                .with_context(|| format!("running {}", python.display()))?;
            if !check.status.success() {
                anyhow::bail!(
                    "--mix kazoo needs kazoo >= 2.7.1 (its Lock's extra_lock_patterns); {} has an older one",
                    python.display()
                );
            }
            let script = peers.join("kazoo_worker.py");
            std::fs::write(&script, KAZOO_WORKER)?;
            foreign.kazoo = Some(vec![
                python.display().to_string(),
                "-u".to_owned(),
                script.display().to_string(),
            ]);
        }
        if mix.contains(&Peer::Curator) {
            let source = peers.join("CuratorWorker.java");
            std::fs::write(&source, CURATOR_WORKER)?;
            let classes = peers.join("classes");
            std::fs::create_dir_all(&classes)?;
            let java = zklock_testkit::peers::compile_against_curator(&source, &classes)
                .map_err(anyhow::Error::msg)
                .context(
                    "--mix curator needs a JDK (java, javac) and the Curator 5 jars in /usr/share/java \
                     (`apt-get install default-jdk-headless libcurator-recipes-java`, or set ZKLOCK_TEST_JAVA, \
                     ZKLOCK_TEST_JAVAC, ZKLOCK_TEST_ZK_JARS)",
                )?;
            // A small heap, C1 only and the serial collector: a fast start, as every kill starts a new JVM.
            foreign.curator = Some(vec![
                java.java.display().to_string(),
                "-Xmx96m".to_owned(),
                "-XX:TieredStopAtLevel=1".to_owned(),
                "-XX:+UseSerialGC".to_owned(),
                "-cp".to_owned(),
                java.classpath,
                "CuratorWorker".to_owned(),
            ]);
        }
        Ok(foreign)
    }

    /// The command line of a `peer` worker (`{k}`: the launch number, replaced by the slot).
    pub fn argv(&self, peer: Peer, line: &WorkerLine<'_>) -> Vec<String> {
        let program = match peer {
            Peer::Kazoo => self.kazoo.as_ref(),
            Peer::Curator => self.curator.as_ref(),
        };
        let mut argv = program.cloned().expect("prepared for every peer of the mix");
        argv.extend([
            line.connect.to_owned(),
            line.path.to_owned(),
            line.register.clone(),
            line.client.to_string(),
            line.session_timeout_ms.to_string(),
            line.until_ns.to_string(),
            line.seed.to_string(),
            "{k}".to_owned(),
        ]);
        if peer == Peer::Curator {
            argv.push(if line.curator_sees_kazoo { "kazoo" } else { "stock" }.to_owned());
        }
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_take_turns() {
        let mix = [Peer::Kazoo, Peer::Curator];
        let sides: Vec<Side> = (0..4).map(|slot| side(&mix, slot)).collect();
        assert_eq!(
            sides,
            [
                Side::Foreign(Peer::Kazoo),
                Side::Foreign(Peer::Curator),
                Side::Zklock,
                Side::Foreign(Peer::Kazoo)
            ]
        );
        assert_eq!(side(&[], 5), Side::Zklock);
    }
}
