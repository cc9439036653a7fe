//! Real ZooKeeper 3.8 servers (a standalone server or an ensemble on 127.0.0.1), run as JVM child processes.

use std::fmt::Write as _;
use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::config::{self, MemberDir, MemberPorts, Settings};
use crate::fourlw::{four_letter_word, mode_of};
use crate::install::installation;
use crate::peer_links::PeerLinks;
use crate::ports::free_port;
use crate::spawn::spawn_tied_to_process;
use crate::tempdirs::instance_dir;

/// ZooKeeper's own default; session timeouts are negotiated to `[2, 20] × tickTime`.
pub const DEFAULT_TICK_TIME_MS: u32 = 2_000;
/// How long [`Builder::start`] and [`ZooKeeper::restart`] wait for members to serve, unless told otherwise.
/// Generous because JVMs start slowly on a loaded 2-core machine.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(90);

/// How long one four-letter-word exchange may take.
const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between readiness polls: a JVM offers no event to wait for, so we ask it.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// A fresh start is retried with new ports this many times when a port turned out to be taken.
const START_ATTEMPTS: usize = 3;
/// Lines of each log shown in start-failure errors.
const LOG_TAIL_LINES: usize = 40;

/// Configures a [`ZooKeeper`] before starting it. Create one with [`ZooKeeper::builder`].
#[derive(Clone, Debug)]
pub struct Builder {
    members: usize,
    settings: Settings,
    start_timeout: Duration,
    /// `-Dkey=value` flags of every member's JVM.
    system_properties: Vec<(String, String)>,
    /// Whether every member has a secure (TLS) client port.
    secure: bool,
    /// The JAAS `Server` section, when SASL is on.
    sasl: Option<ServerSasl>,
    /// Whether the members reach each other through [`PeerLinks`].
    peer_links: bool,
}

impl Builder {
    /// Members reach each other's quorum and election ports through links that can be stopped one way or both, or
    /// made slow, while every member runs: see [`ZooKeeper::peer_links`]. Ignored by a standalone server.
    pub fn peer_links(mut self) -> Self {
        self.peer_links = true;
        self
    }

    /// Number of servers: 1 (the default) runs a standalone server, more run a quorum ensemble.
    pub fn members(mut self, members: usize) -> Self {
        self.members = members;
        self
    }

    /// ZooKeeper's `tickTime` (default 2000). Sessions may negotiate timeouts down to twice this value, so
    /// session-expiry tests use a small tick (e.g. 200–500 ms).
    pub fn tick_time_ms(mut self, tick_time_ms: u32) -> Self {
        self.settings.tick_time_ms = tick_time_ms;
        self
    }

    /// How long to wait for every member to serve (default [`DEFAULT_START_TIMEOUT`]); also used by
    /// [`ZooKeeper::restart`].
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Sets any `zoo.cfg` entry (e.g. `maxSessionTimeout`), replacing the testkit's default for that key.
    pub fn config(mut self, key: &str, value: &str) -> Self {
        self.settings.overrides.retain(|(k, _)| k != key);
        self.settings.overrides.push((key.to_string(), value.to_string()));
        self
    }

    /// Sets a Java system property of every member's JVM (`-Dkey=value`), replacing an earlier value for the same key:
    /// for the settings ZooKeeper reads only from system properties, such as `znode.container.checkIntervalMs`
    /// (how often empty container nodes are deleted; 60 s by default).
    pub fn system_property(mut self, key: &str, value: &str) -> Self {
        self.system_properties.retain(|(k, _)| k != key);
        self.system_properties.push((key.to_string(), value.to_string()));
        self
    }

    /// Gives every member a secure client port as well (`secureClientPort` on 127.0.0.1, with ZooKeeper's Netty
    /// connection factory, which TLS needs): see [`ZooKeeper::secure_addr`]. The TLS settings are `zoo.cfg` entries
    /// set with [`Builder::config`]: `ssl.keyStore.location`, `ssl.keyStore.password`, `ssl.keyStore.type` (`PEM`
    /// or `PKCS12`; [`crate::keytool`] makes PKCS12 stores), `ssl.trustStore.*`, `ssl.clientAuth` (`need`, the
    /// default, `want` or `none`).
    pub fn secure_client_port(mut self) -> Self {
        self.secure = true;
        self
    }

    /// Turns SASL DIGEST-MD5 on, as a ZooKeeper deployment does: a JAAS file with a `Server` section whose
    /// `DigestLoginModule` knows `users` (name, password), named by `-Djava.security.auth.login.config`, and
    /// `authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider` in `zoo.cfg`. SASL is then
    /// offered, not required: add `sessionRequireClientSASLAuth=true`, or `enforce.auth.enabled=true` with
    /// `enforce.auth.schemes`, with [`Builder::config`].
    pub fn sasl_digest_users(mut self, users: &[(&str, &str)]) -> Self {
        self.sasl = Some(ServerSasl::Digest(
            users
                .iter()
                .map(|(user, password)| (user.to_string(), password.to_string()))
                .collect(),
        ));
        self
    }

    /// Turns SASL with Kerberos (GSSAPI) on, as a kerberized ZooKeeper deployment does: a JAAS file whose `Server`
    /// section's `Krb5LoginModule` logs in as `principal` (`zookeeper/localhost@REALM`, the name clients ask the KDC
    /// a ticket for: service `zookeeper`, the host they connect to) with the keys of `keytab`; `krb5_conf` (e.g.
    /// [`crate::kdc::Kdc::krb5_conf`]) names the KDC (`-Djava.security.krb5.conf`); and `authProvider.1` as for
    /// [`Builder::sasl_digest_users`]. Clients that authenticate get the id `sasl:PRINCIPAL` (with its realm: no
    /// `kerberos.removeRealmFromPrincipal`). SASL is offered, not required, unless configured as for DIGEST-MD5.
    pub fn sasl_kerberos(mut self, principal: &str, keytab: &Path, krb5_conf: &Path) -> Self {
        self.sasl = Some(ServerSasl::Kerberos {
            principal: principal.to_owned(),
            keytab: keytab.to_owned(),
        });
        self.system_property("java.security.krb5.conf", &krb5_conf.display().to_string())
    }

    /// Launches every member and blocks until all of them serve: a standalone server reports
    /// `Mode: standalone`, every ensemble member `Mode: leader` or `Mode: follower`.
    ///
    /// # Errors
    /// A member exits or does not serve within the start timeout; the error carries its log tail.
    ///
    /// # Panics
    /// Java or the ZooKeeper jars are not installed (see [`crate::install`] for the overrides).
    pub fn start(self) -> io::Result<ZooKeeper> {
        if self.members == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a ZooKeeper needs at least one member",
            ));
        }
        installation();
        let mut attempt = 1;
        loop {
            match self.try_start() {
                Ok(zookeeper) => return Ok(zookeeper),
                Err(StartFailure {
                    error,
                    port_taken: true,
                }) if attempt < START_ATTEMPTS => {
                    tracing::warn!(attempt, %error, "a ZooKeeper port was taken meanwhile; retrying with new ports");
                    attempt += 1;
                }
                Err(StartFailure { error, .. }) => return Err(error),
            }
        }
    }

    fn try_start(&self) -> Result<ZooKeeper, StartFailure> {
        let dir = instance_dir().map_err(StartFailure::other)?;
        let standalone = self.members == 1;
        let ports = (0..self.members)
            .map(|_| {
                let client = free_port()?;
                let (peer, election) = if standalone {
                    (0, 0)
                } else {
                    (free_port()?, free_port()?)
                };
                let secure = if self.secure { free_port()? } else { 0 };
                Ok(MemberPorts {
                    client,
                    peer,
                    election,
                    secure,
                })
            })
            .collect::<io::Result<Vec<_>>>()
            .map_err(StartFailure::other)?;
        let mut settings = self.settings.clone();
        let mut system_properties = self.system_properties.clone();
        if let Some(sasl) = &self.sasl {
            let jaas = dir.path().join("jaas.conf");
            let text = match sasl {
                ServerSasl::Digest(users) => jaas_server_section(users),
                ServerSasl::Kerberos { principal, keytab } => jaas_kerberos_section(principal, keytab),
            };
            std::fs::write(&jaas, text).map_err(StartFailure::other)?;
            system_properties.push((
                "java.security.auth.login.config".to_owned(),
                jaas.display().to_string(),
            ));
            settings.overrides.push((
                "authProvider.1".to_owned(),
                "org.apache.zookeeper.server.auth.SASLAuthenticationProvider".to_owned(),
            ));
        }
        let links = if self.peer_links && !standalone {
            Some(PeerLinks::start(&ports).map_err(StartFailure::other)?)
        } else {
            None
        };
        let direct = config::direct_view(&ports);
        let mut members = Vec::with_capacity(self.members);
        for index in 0..self.members {
            let member_dir = MemberDir {
                root: dir.path().join(format!("member-{index}")),
            };
            let view = links.as_ref().map_or(&direct[..], |l| l.view(index));
            config::write_member(&member_dir, index, &ports, view, &settings).map_err(StartFailure::other)?;
            members.push(Member {
                ports: ports[index],
                dir: member_dir,
                child: None,
            });
        }
        let mut zookeeper = ZooKeeper {
            members,
            settings,
            start_timeout: self.start_timeout,
            system_properties,
            links,
            _dir: dir,
        };
        for index in 0..self.members {
            zookeeper.launch(index).map_err(StartFailure::other)?;
        }
        let all: Vec<usize> = (0..self.members).collect();
        if let Err(error) = zookeeper.wait_serving(&all) {
            let port_taken = all.iter().any(|&i| zookeeper.log_mentions_bind_failure(i));
            return Err(StartFailure { error, port_taken });
        }
        tracing::info!(connect = %zookeeper.connect_string(), "real ZooKeeper serving");
        Ok(zookeeper)
    }
}

/// The SASL of a real ZooKeeper's JAAS `Server` section.
#[derive(Clone, Debug)]
enum ServerSasl {
    /// DIGEST-MD5 with these users (name, password).
    Digest(Vec<(String, String)>),
    /// Kerberos: the server's principal and its keytab.
    Kerberos { principal: String, keytab: PathBuf },
}

/// A JAAS file whose `Server` section logs ZooKeeper's server in to Kerberos as `principal` with `keytab`.
fn jaas_kerberos_section(principal: &str, keytab: &Path) -> String {
    format!(
        "Server {{\n    com.sun.security.auth.module.Krb5LoginModule required\n    useKeyTab=true\n    \
         keyTab=\"{}\"\n    storeKey=true\n    useTicketCache=false\n    principal=\"{principal}\";\n}};\n",
        keytab.display()
    )
}

/// A JAAS file whose `Server` section (the one ZooKeeper's server reads) lets `users` in with DIGEST-MD5.
pub(crate) fn jaas_server_section(users: &[(String, String)]) -> String {
    let mut text = String::from("Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required");
    for (user, password) in users {
        let _ = write!(text, "\n    user_{user}=\"{password}\"");
    }
    text.push_str(";\n};\n");
    text
}

struct StartFailure {
    error: io::Error,
    port_taken: bool,
}

impl StartFailure {
    fn other(error: io::Error) -> Self {
        StartFailure {
            error,
            port_taken: false,
        }
    }
}

/// One standalone ZooKeeper server or an N-member ensemble, each member a `java` child process on 127.0.0.1.
///
/// Members are numbered from 0 (member `i` has `myid` `i + 1`). Dropping the value SIGKILLs every member by pid,
/// reaps it and removes the temp directory; this also happens while a panicking test unwinds. Every member also
/// has `PR_SET_PDEATHSIG = SIGKILL`, so it dies with the test process even when nothing is dropped.
pub struct ZooKeeper {
    members: Vec<Member>,
    settings: Settings,
    start_timeout: Duration,
    /// `-Dkey=value` flags of every member's JVM ([`Builder::system_property`]).
    system_properties: Vec<(String, String)>,
    /// The links between members ([`Builder::peer_links`]); dropped after the members are killed.
    links: Option<PeerLinks>,
    /// Removed on drop, after `Drop for ZooKeeper` killed the processes writing into it.
    _dir: TempDir,
}

struct Member {
    ports: MemberPorts,
    dir: MemberDir,
    /// `None` while killed.
    child: Option<Child>,
}

impl ZooKeeper {
    /// A builder: standalone, `tickTime` 2000, 90 s start timeout unless changed.
    pub fn builder() -> Builder {
        Builder {
            members: 1,
            settings: Settings {
                tick_time_ms: DEFAULT_TICK_TIME_MS,
                overrides: Vec::new(),
            },
            start_timeout: DEFAULT_START_TIMEOUT,
            system_properties: Vec::new(),
            secure: false,
            sasl: None,
            peer_links: false,
        }
    }

    /// Starts a standalone server with default settings and waits until it serves.
    ///
    /// # Errors
    /// See [`Builder::start`].
    pub fn standalone() -> io::Result<ZooKeeper> {
        Self::builder().start()
    }

    /// Starts a quorum of `members` servers with default settings and waits until all of them serve.
    ///
    /// # Errors
    /// See [`Builder::start`].
    pub fn ensemble(members: usize) -> io::Result<ZooKeeper> {
        Self::builder().members(members).start()
    }

    /// `"127.0.0.1:p1,127.0.0.1:p2,..."`, every member including killed ones.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(|m| m.ports.client_addr().to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client address of member `i`.
    pub fn member_addr(&self, i: usize) -> SocketAddr {
        self.members[i].ports.client_addr()
    }

    /// The secure (TLS) client address of member `i`, when started with [`Builder::secure_client_port`].
    pub fn secure_addr(&self, i: usize) -> Option<SocketAddr> {
        self.members[i].ports.secure_addr()
    }

    /// `"127.0.0.1:s1,127.0.0.1:s2,..."`: the secure client addresses, for a TLS client (empty without
    /// [`Builder::secure_client_port`]).
    pub fn secure_connect_string(&self) -> String {
        self.members
            .iter()
            .filter_map(|m| m.ports.secure_addr())
            .map(|addr| addr.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The links between the members, when started with [`Builder::peer_links`].
    pub fn peer_links(&self) -> Option<&PeerLinks> {
        self.links.as_ref()
    }

    /// Number of members (1 for a standalone server).
    pub fn members(&self) -> usize {
        self.members.len()
    }

    /// The `tickTime` the servers run with.
    pub fn tick_time(&self) -> Duration {
        Duration::from_millis(self.settings.tick_time_ms.into())
    }

    /// The process id of member `i`, while it runs (for measurements such as its resident memory).
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].child.as_ref().map(Child::id)
    }

    /// Whether member `i` is running (not killed by [`ZooKeeper::kill`]).
    pub fn is_running(&self, i: usize) -> bool {
        self.members[i].child.is_some()
    }

    /// SIGKILLs member `i` by its pid and reaps it. Killing a killed member does nothing.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            tracing::info!(member = i, pid = child.id(), "killing ZooKeeper member");
            // Fails only if the process is already gone (it crashed); wait() reaps it either way.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `i` again with the same ports, data and configuration, and waits until it serves
    /// (rejoined the quorum as leader or follower, or serves standalone). A running member is killed first.
    ///
    /// # Errors
    /// The member exits or does not serve within the start timeout; the error carries its log tail.
    pub fn restart(&mut self, i: usize) -> io::Result<()> {
        self.kill(i);
        self.launch(i)?;
        self.wait_serving(&[i])
    }

    /// The member that is leader (`Mode: leader`, or `Mode: standalone` for a standalone server), asking each
    /// running member with `srvr`. `None` while no member claims it (during an election).
    pub fn leader(&self) -> Option<usize> {
        (0..self.members.len())
            .filter(|&i| self.is_running(i))
            .find(|&i| matches!(self.mode(i).as_deref(), Some("leader" | "standalone")))
    }

    /// Waits (bounded by `timeout`) until some member is [`ZooKeeper::leader`].
    ///
    /// # Errors
    /// `TimedOut` when no leader appears in time.
    pub fn wait_for_leader(&self, timeout: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(leader) = self.leader() {
                return Ok(leader);
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no ZooKeeper leader after {timeout:?}"),
                ));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Member `i`'s role from `srvr` (`leader`, `follower`, `standalone`), `None` if it is down or not serving.
    pub fn mode(&self, i: usize) -> Option<String> {
        let answer = self.four_letter(i, "srvr").ok()?;
        mode_of(&answer).map(str::to_string)
    }

    /// Sends a four-letter word (`ruok`, `srvr`, `mntr`, `cons`, ...) to member `i` and returns the answer.
    ///
    /// # Errors
    /// The member does not answer within 10 s (for example because it is killed).
    pub fn four_letter(&self, i: usize, word: &str) -> io::Result<String> {
        four_letter_word(self.member_addr(i), word, FOUR_LETTER_TIMEOUT)
    }

    /// Member `i`'s `dataDir` (holds `myid`, `version-2/` snapshots and logs).
    pub fn data_dir(&self, i: usize) -> PathBuf {
        self.members[i].dir.data()
    }

    /// The last `lines` lines of member `i`'s server log and JVM console, for diagnostics.
    pub fn log_tail(&self, i: usize, lines: usize) -> String {
        let dir = &self.members[i].dir;
        let mut text = String::new();
        for path in [dir.log(), dir.console()] {
            let content = std::fs::read_to_string(&path).unwrap_or_default();
            let all: Vec<&str> = content.lines().collect();
            let _ = writeln!(text, "--- member {i}: last {lines} lines of {}", path.display());
            for line in &all[all.len().saturating_sub(lines)..] {
                let _ = writeln!(text, "{line}");
            }
        }
        text
    }

    fn launch(&mut self, i: usize) -> io::Result<()> {
        let install = installation();
        let member = &self.members[i];
        let console = File::options()
            .create(true)
            .append(true)
            .open(member.dir.console())?;
        let mut command = Command::new(&install.java);
        // Fast JVM start-up and a small footprint: tests start many servers on a small machine.
        command.args([
            "-Xshare:auto",
            "-XX:TieredStopAtLevel=1",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:-UsePerfData",
        ]);
        command.args([
            "-Djava.net.preferIPv4Stack=true",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=*",
            "-Dzookeeper.jmx.log4j.disable=true",
        ]);
        command.arg(format!("-Dzookeeper.log.dir={}", member.dir.root.display()));
        for (key, value) in &self.system_properties {
            command.arg(format!("-D{key}={value}"));
        }
        if install.log4j {
            command.arg(format!(
                "-Dlog4j.configuration=file:{}",
                member.dir.log4j_properties().display()
            ));
        }
        command
            .arg("-cp")
            .arg(&install.classpath)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(member.dir.zoo_cfg())
            .current_dir(&member.dir.root)
            .stdin(Stdio::null())
            .stdout(console.try_clone()?)
            .stderr(console);
        let child = spawn_tied_to_process(command)?;
        tracing::info!(member = i, pid = child.id(), addr = %member.ports.client_addr(), "launched ZooKeeper member");
        self.members[i].child = Some(child);
        Ok(())
    }

    /// Polls the given members until each serves in the role expected of it, or one exits, or time runs out.
    fn wait_serving(&mut self, members: &[usize]) -> io::Result<()> {
        let standalone = self.members.len() == 1;
        let deadline = Instant::now() + self.start_timeout;
        loop {
            let mut waiting = Vec::new();
            for &i in members {
                self.check_alive(i)?;
                let mode = self.mode(i);
                let serving = match mode.as_deref() {
                    Some("standalone") => standalone,
                    Some("leader" | "follower") => !standalone,
                    _ => false,
                } && self.secure_port_accepts(i);
                if !serving {
                    waiting.push((i, mode));
                }
            }
            if waiting.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let mut message = format!("ZooKeeper members not serving after {:?}:", self.start_timeout);
                for (i, mode) in &waiting {
                    let _ = write!(
                        message,
                        "\nmember {i} at {} reports mode {mode:?}",
                        self.member_addr(*i)
                    );
                }
                for (i, _) in &waiting {
                    let _ = write!(message, "\n{}", self.log_tail(*i, LOG_TAIL_LINES));
                }
                return Err(io::Error::new(io::ErrorKind::TimedOut, message));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Whether member `i`'s secure client port (if it has one) accepts connections. ZooKeeper binds it after the
    /// plaintext port already answers four-letter words: a TLS client started in between is refused.
    fn secure_port_accepts(&self, i: usize) -> bool {
        self.members[i].ports.secure_addr().is_none_or(|addr| {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
        })
    }

    /// An error (with the log tail) if member `i`'s process has exited.
    fn check_alive(&mut self, i: usize) -> io::Result<()> {
        let Some(child) = self.members[i].child.as_mut() else {
            return Err(io::Error::other(format!("ZooKeeper member {i} is not running")));
        };
        match child.try_wait()? {
            None => Ok(()),
            Some(status) => {
                self.members[i].child = None;
                Err(io::Error::other(format!(
                    "ZooKeeper member {i} exited during start-up ({status})\n{}",
                    self.log_tail(i, LOG_TAIL_LINES)
                )))
            }
        }
    }

    fn log_mentions_bind_failure(&self, i: usize) -> bool {
        let dir = &self.members[i].dir;
        [dir.log(), dir.console()].iter().any(|path| {
            let content = std::fs::read_to_string(path).unwrap_or_default();
            content.contains("Address already in use") || content.contains("BindException")
        })
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

impl std::fmt::Debug for ZooKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZooKeeper")
            .field("connect_string", &self.connect_string())
            .field("tick_time_ms", &self.settings.tick_time_ms)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jaas_server_section_lists_every_user() {
        let users = [("bob", "b0b"), ("alice", "s3cret")].map(|(u, p)| (u.to_owned(), p.to_owned()));
        assert_eq!(
            jaas_server_section(&users),
            "Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n    user_bob=\"b0b\"\n    \
             user_alice=\"s3cret\";\n};\n"
        );
    }

    #[test]
    fn the_kerberos_server_section_logs_in_with_the_keytab() {
        assert_eq!(
            jaas_kerberos_section("zookeeper/localhost@ZKLOCK.TEST", Path::new("/k/zk.keytab")),
            "Server {\n    com.sun.security.auth.module.Krb5LoginModule required\n    useKeyTab=true\n    \
             keyTab=\"/k/zk.keytab\"\n    storeKey=true\n    useTicketCache=false\n    \
             principal=\"zookeeper/localhost@ZKLOCK.TEST\";\n};\n"
        );
    }
}
