//! A real MIT Kerberos KDC (Debian `krb5-kdc`, `krb5-admin-server`) for tests: its own realm, database and
//! configuration in a temporary directory, listening on 127.0.0.1 only, with principals and keytabs made by
//! `kadmin.local` and tickets by `kinit`.
//!
//! Nothing is read from or written to the machine's Kerberos configuration: every program is run with
//! `KRB5_CONFIG` and `KRB5_KDC_PROFILE` naming the files of the temporary directory. The KDC runs in the foreground
//! (`krb5kdc -n`) as a child tied to the test process ([`crate::spawn_tied_to_process`]) and is killed (by its pid)
//! when the [`Kdc`] drops.

use std::io;
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::ports::free_port;
use crate::spawn::spawn_tied_to_process;
use crate::tempdirs::instance_dir;

/// How long the KDC may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause between polls of the KDC's port: krb5kdc offers no readiness event.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The clock skew the KDC and clients allow (`clockskew` in `krb5_conf`): ZooKeeper and the KDC run on this
/// machine, and an expired ticket must be refused soon after it expired.
const CLOCK_SKEW: Duration = Duration::from_secs(1);

/// A running MIT KDC; see the module's documentation.
pub struct Kdc {
    realm: String,
    port: u16,
    krb5_conf: PathBuf,
    kdc_conf: PathBuf,
    /// `None` only while the realm is being created.
    child: Option<Child>,
    dir: TempDir,
}

impl Kdc {
    /// Creates a realm (`kdb5_util create -s`) in a new temporary directory (removed on drop, or by the next
    /// testkit instance once this process is gone) and starts its KDC on a free port of
    /// 127.0.0.1 (TCP; clients are told to use TCP only, `udp_preference_limit = 1`). Returns once the KDC accepts
    /// connections.
    ///
    /// # Errors
    /// The Kerberos programs are missing (`apt-get install krb5-kdc krb5-admin-server krb5-user`), fail (their
    /// stderr is in the error), or the KDC does not listen within 30 s.
    pub fn start(realm: &str) -> io::Result<Kdc> {
        // Swept when its owner is gone, as ZooKeeper's are: a KDC kept in a static never drops.
        let dir = instance_dir()?;
        let port = free_port()?;
        let root = dir.path();
        let krb5_conf = root.join("krb5.conf");
        let kdc_conf = root.join("kdc.conf");
        std::fs::write(&krb5_conf, krb5_conf_text(realm, port))?;
        std::fs::write(
            &kdc_conf,
            format!(
                "[kdcdefaults]\n    kdc_listen = 127.0.0.1:{port}\n    kdc_tcp_listen = 127.0.0.1:{port}\n\n\
                 [realms]\n    {realm} = {{\n        database_name = {db}\n        key_stash_file = {stash}\n        \
                 acl_file = {acl}\n        kdc_listen = 127.0.0.1:{port}\n        kdc_tcp_listen = 127.0.0.1:{port}\n        \
                 max_life = 1h\n        supported_enctypes = aes256-cts-hmac-sha1-96:normal \
                 aes128-cts-hmac-sha1-96:normal\n    }}\n\n[logging]\n    kdc = FILE:{log}\n",
                db = root.join("principal").display(),
                stash = root.join("stash").display(),
                acl = root.join("kadm5.acl").display(),
                log = root.join("kdc.log").display(),
            ),
        )?;
        std::fs::write(root.join("kadm5.acl"), "")?;
        let mut kdc = Kdc {
            realm: realm.to_owned(),
            port,
            krb5_conf,
            kdc_conf,
            child: None,
            dir,
        };
        // A master password nobody needs: the stash file (-s) holds the key.
        kdc.run(
            "kdb5_util",
            &["create", "-s", "-r", realm, "-P", "zklock-test-master"],
        )?;
        let mut command = Command::new(program("krb5kdc"));
        command.args(["-n", "-r", realm]);
        kdc.configure(&mut command);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = kdc.child.insert(spawn_tied_to_process(command)?);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                break;
            }
            if let Some(status) = child.try_wait()? {
                return Err(io::Error::other(format!(
                    "krb5kdc exited ({status}) before listening on 127.0.0.1:{port}; its log:\n{}",
                    std::fs::read_to_string(kdc.dir.path().join("kdc.log")).unwrap_or_default()
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "krb5kdc does not listen on 127.0.0.1:{port} after {START_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        tracing::info!(realm, port, "MIT KDC serving");
        Ok(kdc)
    }

    /// The realm.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// The KDC's TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `krb5.conf` clients use (`KRB5_CONFIG`, or `-Djava.security.krb5.conf` for a JVM): this realm, its KDC
    /// at 127.0.0.1, no DNS, TCP only.
    pub fn krb5_conf(&self) -> &Path {
        &self.krb5_conf
    }

    /// The temporary directory the KDC's files are in (a test may put its ticket caches there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Adds the principal `name` (`bob`, `zookeeper/localhost`; the realm is added) with a random key and writes
    /// its keys to a new keytab, whose path is returned (mode 600).
    ///
    /// # Errors
    /// `kadmin.local` fails; its stderr is in the error.
    pub fn add_principal(&self, name: &str) -> io::Result<PathBuf> {
        let principal = format!("{name}@{}", self.realm);
        let keytab = self
            .dir
            .path()
            .join(format!("{}.keytab", name.replace(['/', '@'], "_")));
        self.run("kadmin.local", &["-q", &format!("addprinc -randkey {principal}")])?;
        self.run(
            "kadmin.local",
            &["-q", &format!("ktadd -k {} {principal}", keytab.display())],
        )?;
        if !keytab.exists() {
            return Err(io::Error::other(format!(
                "kadmin.local wrote no keytab for {principal}"
            )));
        }
        Ok(keytab)
    }

    /// Gets a ticket for `name` (the realm is added) from `keytab` into the ticket cache file `ccache`
    /// (`kinit -kt`), as a user's `kinit` does.
    ///
    /// # Errors
    /// `kinit` fails; its stderr is in the error.
    pub fn kinit(&self, name: &str, keytab: &Path, ccache: &Path) -> io::Result<()> {
        self.kinit_for(name, keytab, ccache, None)
    }

    /// [`Kdc::kinit`] with a ticket that expires after `lifetime` (whole seconds, `kinit -l`), and returns once it
    /// has expired (`klist -s` fails; polled, bounded by `lifetime` + 30 s) and the KDC's clock skew has passed:
    /// a ticket cache holding only an expired ticket, which the KDC refuses.
    ///
    /// # Errors
    /// `kinit` fails, or the ticket is still valid 30 s after it should have expired.
    pub fn kinit_expired(
        &self,
        name: &str,
        keytab: &Path,
        ccache: &Path,
        lifetime: Duration,
    ) -> io::Result<()> {
        self.kinit_for(name, keytab, ccache, Some(lifetime))?;
        let deadline = Instant::now() + lifetime + START_TIMEOUT;
        loop {
            let mut klist = Command::new(program("klist"));
            klist
                .arg("-s")
                .env("KRB5CCNAME", format!("FILE:{}", ccache.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            self.configure(&mut klist);
            if !klist.status()?.success() {
                // Expired for us; the KDC honours a ticket until its clock skew (1 s, `krb5_conf`) has passed
                // too, and no event tells when that is.
                std::thread::sleep(CLOCK_SKEW * 2);
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other("the ticket did not expire"));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    fn kinit_for(
        &self,
        name: &str,
        keytab: &Path,
        ccache: &Path,
        lifetime: Option<Duration>,
    ) -> io::Result<()> {
        let principal = format!("{name}@{}", self.realm);
        let mut command = Command::new(program("kinit"));
        if let Some(lifetime) = lifetime {
            command.arg("-l").arg(format!("{}s", lifetime.as_secs().max(1)));
        }
        command
            .args(["-kt"])
            .arg(keytab)
            .arg(&principal)
            .env("KRB5CCNAME", format!("FILE:{}", ccache.display()));
        self.output(command, "kinit").map(drop)
    }

    /// Sets the environment every Kerberos program of this realm needs.
    fn configure(&self, command: &mut Command) {
        command
            .env("KRB5_CONFIG", &self.krb5_conf)
            .env("KRB5_KDC_PROFILE", &self.kdc_conf);
    }

    /// Runs a Kerberos administration program.
    fn run(&self, program: &str, args: &[&str]) -> io::Result<()> {
        let mut command = Command::new(self::program(program));
        command.args(args);
        self.output(command, program).map(drop)
    }

    /// Runs `command` to its end (stdin closed) and fails with its stderr unless it succeeds.
    fn output(&self, mut command: Command, what: &str) -> io::Result<std::process::Output> {
        self.configure(&mut command);
        let output = command
            .stdin(Stdio::null())
            .output()
            .map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("cannot run {what} (is MIT Kerberos installed: krb5-kdc, krb5-admin-server, krb5-user?): {err}"),
                )
            })?;
        // kadmin.local reports some failures on stderr with status 0.
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() || stderr.contains("while ") {
            return Err(io::Error::other(format!(
                "{what} failed ({}): {stderr}",
                output.status
            )));
        }
        Ok(output)
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        // Our own child, by pid (Child::kill).
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The Kerberos program `name`: in /usr/sbin (krb5kdc, kdb5_util, kadmin.local), which is not in every user's
/// `PATH`, or else wherever `PATH` finds it.
fn program(name: &str) -> PathBuf {
    let sbin = Path::new("/usr/sbin").join(name);
    if sbin.exists() {
        sbin
    } else {
        PathBuf::from(name)
    }
}

/// The client configuration of `realm` whose KDC listens on 127.0.0.1:`port`.
fn krb5_conf_text(realm: &str, port: u16) -> String {
    format!(
        "[libdefaults]\n    default_realm = {realm}\n    dns_lookup_kdc = false\n    dns_lookup_realm = false\n    \
         rdns = false\n    dns_canonicalize_hostname = false\n    udp_preference_limit = 1\n    \
         ticket_lifetime = 1h\n    clockskew = 1\n\n[realms]\n    {realm} = {{\n        kdc = 127.0.0.1:{port}\n    }}\n\n\
         [domain_realm]\n    localhost = {realm}\n"
    )
}
