//! The command line, as clap sees it: every command's arguments, and each command's exit statuses in its `--help`
//! (from [`crate::exit`]). What can be checked without a server is checked here, once, so that a bad value is a
//! usage error (exit 64) before anything starts: durations ([`seconds`]) and connect strings ([`connect_string`]).
//! Paths are checked by the recipes (each command maps that to a usage error). Imports nothing else of this crate
//! but the exit table.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::exit::{self, Cmd};
use crate::values::*;

/// Fair distributed locks, coordination, configuration and discovery on ZooKeeper: run, elect, watch, register,
/// discover, status, counter, revoke, reap, serve, demo, bench.
#[derive(Debug, Parser)]
#[command(name = "zklock", version, propagate_version = true, after_help = LOG_HELP)]
pub struct Cli {
    /// More log output on stderr: -v info, -vv debug, -vvv trace (ZKLOCK_LOG, when set, overrides it).
    #[arg(short, long, action = clap::ArgAction::Count, global = true, conflicts_with = "quiet")]
    pub verbose: u8,
    /// Log errors only (ZKLOCK_LOG, when set, overrides it).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// ZooKeeper connect string, `host:port[,host:port...][/chroot]`, before or after the command. [default:
    /// 127.0.0.1:2181; demo and bench: an embedded, temporary server; serve takes none]
    #[arg(
        long = "connect",
        short = 'c',
        global = true,
        env = "ZKLOCK_CONNECT",
        value_name = "HOSTS",
        value_parser = connect_string
    )]
    pub connect: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line's definition, with `serve`'s own hidden `--connect` in place of the global one, so that
    /// `serve --help` does not offer it (serve is the server and refuses it, issue 33.9): clap propagates a global
    /// argument only to subcommands without one of the same name.
    pub fn built() -> clap::Command {
        use clap::CommandFactory as _;
        Cli::command().mut_subcommand("serve", |serve| {
            serve.arg(
                clap::Arg::new("connect")
                    .short('c')
                    .long("connect")
                    .value_name("HOSTS")
                    .hide(true),
            )
        })
    }
}

/// Where a command that needs ZooKeeper connects without `--connect` or `ZKLOCK_CONNECT`.
pub const DEFAULT_CONNECT: &str = "127.0.0.1:2181";

impl Cli {
    /// Parses the command line (clap's error on a usage error), and hands the global `--connect` to the command's
    /// own arguments: `zklock -c HOST status /x` and `zklock status -c HOST /x` are the same. `serve` refuses a
    /// `--connect` given on its command line (it is the server; `ZKLOCK_CONNECT` in its environment is ignored).
    pub fn parse_args(
        args: impl IntoIterator<Item = impl Into<std::ffi::OsString> + Clone>,
    ) -> Result<Cli, clap::Error> {
        use clap::parser::ValueSource;
        use clap::{CommandFactory as _, FromArgMatches as _};
        let matches = Cli::built().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        let given = matches.value_source("connect") == Some(ValueSource::CommandLine)
            || matches
                .subcommand()
                .is_some_and(|(_, sub)| sub.value_source("connect") == Some(ValueSource::CommandLine));
        let hosts = cli.connect.clone();
        let required = || hosts.clone().unwrap_or_else(|| DEFAULT_CONNECT.to_owned());
        match &mut cli.command {
            Command::Run(args) => args.connect.hosts = required(),
            Command::Elect(args) => args.connect.hosts = required(),
            Command::Status(args) => args.connect.hosts = required(),
            Command::Counter(args) => args.connect.hosts = required(),
            Command::Revoke(args) => args.connect.hosts = required(),
            Command::Reap(args) => args.connect.hosts = required(),
            Command::Watch(args) => args.connect.hosts = required(),
            Command::Register(args) => args.connect.hosts = required(),
            Command::Discover(args) => args.connect.hosts = required(),
            Command::Demo(args) => args.connect.hosts = hosts.clone(),
            Command::Bench(args) => args.connect.hosts = hosts.clone(),
            Command::Serve(_) if given => {
                return Err(Cli::command().error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "zklock serve takes no --connect: it is the server (--listen ADDR says where it listens)",
                ));
            }
            Command::Serve(_) | Command::Completions { .. } | Command::Man => {}
        }
        Ok(cli)
    }
}

/// The top-level `--help`'s word on logs (applied in `main.rs`).
const LOG_HELP: &str = "\
Logs go to stderr: warnings and errors by default (`serve`: info too); -q errors only; -v info, -vv debug, -vvv \
trace.
  ZKLOCK_LOG   when set, overrides -v/-q: tracing EnvFilter directives, e.g. ZKLOCK_LOG=debug or
               ZKLOCK_LOG=info,zookeeper_client=warn
  NO_COLOR     when set (non-empty), no colour; otherwise colour only when stderr is a terminal (no-color.org)
`zklock serve --log-format json` writes one JSON object per line.";

/// Where ZooKeeper is.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// The connect string: the global `--connect` (or `ZKLOCK_CONNECT`, or [`DEFAULT_CONNECT`]), filled in by
    /// [`Cli::parse_args`].
    #[arg(skip)]
    pub hosts: String,
    /// Requested session timeout (ZooKeeper clamps it to [2, 20] × its tickTime). A duration: 10, 1.5, 10s,
    /// 1m30s, 500ms.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true)]
    pub session_timeout: f64,
    /// How long to keep trying to make a session while no server answers (a server restarting, an ensemble
    /// electing its leader); 0: one try, failing at once. A duration: 5, 1.5, 5s, 1m, 500ms.
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true)]
    pub connect_timeout: f64,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// Who we are to ZooKeeper, and TLS: every command that connects to a ZooKeeper it is given takes these (resolved
/// and read in `zk/`: `security.rs`, `sasl.rs`, `kerberos.rs`, `tls.rs`). Credentials given on the command line are
/// visible to every user of the machine (`ps`); `ZKLOCK_AUTH` and `--auth-file` keep them out of it.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Authentication and TLS")]
pub struct SecurityArgs {
    /// Authenticate as SCHEME:CREDENTIALS, e.g. digest:alice:secret (repeatable). Other users can read it in `ps`:
    /// prefer ZKLOCK_AUTH (one SCHEME:CREDENTIALS per line, used when no --auth is given) or --auth-file.
    #[arg(long = "auth", value_name = "SCHEME:CREDENTIALS", value_parser = credential)]
    pub auth: Vec<Credential>,
    /// Authenticate with each SCHEME:CREDENTIALS line of FILE (besides --auth or ZKLOCK_AUTH); blank lines and
    /// lines starting with # are skipped. Keep it private (chmod 600): zklock warns otherwise.
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
    /// Connect with TLS, trusting the CA certificates (PEM) in FILE: every server of --connect without a scheme is
    /// then reached over TLS, so give the servers' secure client ports (secureClientPort); one written
    /// tcp://host:port stays plaintext. Servers written tcp+tls://host:port need it too.
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Our client certificate (PEM) for TLS, for servers that ask for one (ssl.clientAuth); with --tls-key.
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_CERT", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Authenticate with SASL: digest-md5:USER (a user of the JAAS Server section of ZooKeeper, for servers that
    /// require SASL; its password comes from ZKLOCK_SASL_PASSWORD or --sasl-password-file, never from the command
    /// line), or gssapi[:PRINCIPAL] (Kerberos: the ticket of the ticket cache, KRB5CCNAME, or of --keytab; with
    /// PRINCIPAL, the server must name us that; KRB5_CONFIG is honoured; only in a zklock built with the cargo
    /// feature sasl-gssapi). GSSAPI asks the KDC for a ticket for SERVICE/HOST, HOST as --connect writes it: give
    /// --connect the host name of the server's principal (zookeeper/localhost: --connect localhost:2181). Under
    /// SASL, --acl creator gives the nodes to sasl:USER (Kerberos: sasl:PRINCIPAL, e.g. sasl:bob@EXAMPLE.COM).
    #[arg(long, value_name = "MECHANISM[:USER]", env = "ZKLOCK_SASL", value_parser = sasl_spec)]
    pub sasl: Option<SaslSpec>,
    /// The password of --sasl: the first line of FILE (instead of ZKLOCK_SASL_PASSWORD). Keep it private (chmod
    /// 600): zklock warns otherwise.
    #[arg(long, value_name = "FILE", requires = "sasl")]
    pub sasl_password_file: Option<PathBuf>,
    /// The service name of the server's SASL principal [default: zookeeper]. DIGEST-MD5 always uses zookeeper
    /// (ZooKeeper's DIGEST-MD5 server expects the digest-uri zookeeper/zk-sasl-md5), so another name is refused;
    /// GSSAPI asks for a ticket for NAME/HOST.
    #[arg(long, value_name = "NAME", requires = "sasl")]
    pub sasl_service: Option<String>,
    /// --sasl gssapi: log in to Kerberos with the (first) principal of this keytab instead of the ticket cache;
    /// zklock keeps the ticket in memory and leaves the ticket cache alone. The command zklock runs inherits
    /// KRB5_CLIENT_KTNAME=FILE and a KRB5CCNAME of zklock's memory. Keep it private (chmod 600).
    #[arg(long, value_name = "FILE", env = "ZKLOCK_KEYTAB", requires = "sasl")]
    pub keytab: Option<PathBuf>,
}

/// The ACLs of the nodes a command creates (`run`, `elect`, `demo`); turned into a session's ACLs in `zk/acl.rs`.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Authentication and TLS")]
pub struct AclArgs {
    /// The ACL of the nodes zklock creates: `world` (anybody may do anything), `creator` (only sessions with our
    /// credentials), or a comma-separated list of those and digest:USER:HASH or sasl:USER entries, each
    /// optionally with :PERMS from cdrwa (e.g. creator,digest:bob:HASH:cdrwa,world:r); HASH is
    /// base64(sha1(USER:PASSWORD)).
    /// [default: creator with credentials, world without]
    #[arg(long, value_name = "ACL", value_parser = acl_spec)]
    pub acl: Option<AclSpec>,
    /// The ACL of the directories zklock creates when missing (same form as --acl). [default: the --acl entries
    /// plus world:r, so that anybody may see who holds or waits but nobody else may queue]
    #[arg(long, value_name = "ACL", value_parser = acl_spec)]
    pub parent_acl: Option<AclSpec>,
}

/// Like [`ConnectArgs`], but without `--connect` an embedded server is started.
#[derive(Debug, Clone, Args)]
pub struct OptionalConnectArgs {
    /// The global `--connect` (or `ZKLOCK_CONNECT`), filled in by [`Cli::parse_args`]; without it an embedded,
    /// temporary server is started.
    #[arg(skip)]
    pub hosts: Option<String>,
    /// Requested session timeout (a duration: 10, 1.5, 10s, 1m30s, 500ms).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true)]
    pub session_timeout: f64,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command while holding a cluster-wide lock (a distributed `flock`).
    ///
    /// The lock is a mutex; with --shared or --write, the read or the write side of a read/write lock; with
    /// --leases N, one of N leases of a semaphore. Different kinds of lock on one PATH do not exclude each other,
    /// so `zklock run` refuses (exit 64) a PATH in use by another kind.
    ///
    /// On a terminal (zklock its foreground job) the command gets the terminal, as under flock: it can read it
    /// (prompts, `read`, psql), and Ctrl-C reaches the command, not zklock; zklock releases the lock once the
    /// command has exited and takes the terminal back. Ctrl-Z stops only the command: zklock keeps the lock, takes
    /// the terminal back and says so; `kill -CONT PID` resumes the command, Ctrl-C ends it. Started in the
    /// background (`&`), the command gets the terminal once `fg` brings zklock to the foreground.
    #[command(after_long_help = exit::help(Cmd::Run))]
    Run(RunArgs),
    /// Run a command only while this process is the elected leader; stop it as soon as leadership is lost.
    ///
    /// Leadership lost with our ZooKeeper session (it expired, the connection was down longer than the session
    /// timeout allows, or zklock could not confirm it in time): the command is stopped, zklock makes a new session
    /// and campaigns again, and runs the command again (with a new, larger ZKLOCK_FENCING_TOKEN) once it leads
    /// again; --exit-on-expiry exits 75 instead. Leadership taken away (`zklock revoke`, its node deleted, a
    /// revocation requested): the command is stopped and zklock exits 75. --nonblock and --timeout limit every
    /// campaign.
    ///
    /// With --observe, campaign for nothing and print the leader on every change instead. On a terminal the command
    /// gets it as under `zklock run` (see its --help).
    #[command(after_long_help = exit::help(Cmd::Elect))]
    Elect(ElectArgs),
    /// Show the holder and the queue of a lock directory.
    #[command(after_long_help = exit::help(Cmd::Status))]
    Status(StatusArgs),
    /// Read, set or add to a counter kept in one node (Curator's DistributedAtomicLong or SharedCount).
    ///
    /// `get` prints the value; `set VALUE` and `add [VALUE]` (1 by default; negative to subtract) print the value
    /// after the change. Every change is a compare-and-set that is counted once even when a reply is lost. `add`
    /// refuses a sum the counter cannot hold (exit 64): a counter never wraps. A node with children, or one another
    /// recipe uses, is never taken for a counter.
    #[command(after_long_help = exit::help(Cmd::Counter))]
    Counter(CounterArgs),
    /// The design documents' demo: N workers with their own sessions hand a lock over in FIFO order.
    #[command(after_long_help = exit::help(Cmd::Demo))]
    Demo(DemoArgs),
    /// Benchmark zklock's Mutex against zookeeper-client's `Client::lock` on the same server, side by side.
    #[command(after_long_help = exit::help(Cmd::Bench))]
    Bench(BenchArgs),
    /// Run the embedded ZooKeeper-compatible server.
    #[command(after_long_help = exit::help(Cmd::Serve))]
    Serve(ServeArgs),
    /// Take a lock, a lease or leadership away from its holder: delete the holder's node (or a waiter's, with
    /// --node), or ask the holder to give up (--request).
    ///
    /// A deleted holder loses its guard: `zklock run` and `zklock elect` stop their command (SIGTERM, then SIGKILL
    /// after their --kill-after) and exit 75, and the next in line takes over. With --request the node's data
    /// becomes `__REVOKE__` (Curator's revocation protocol): `zklock run` and `zklock elect` honour it the same way,
    /// and so does a Curator lock made revocable; a holder that does not listen ignores it.
    #[command(after_long_help = exit::help(Cmd::Revoke))]
    Revoke(RevokeArgs),
    /// Remove the empty recipe directories under a path: what the server does by itself with container nodes
    /// (ZooKeeper 3.5+, zklock serve), for directories made before or elsewhere.
    ///
    /// Depth first, it removes PATH and every node below it that has no children, no data, is not ephemeral, and
    /// has had children (as ZooKeeper's container sweep does: a directory made and never used, or a set barrier,
    /// stays). A directory that gains a child meanwhile is left alone: ZooKeeper refuses to delete a node with
    /// children. /zookeeper is never touched.
    #[command(after_long_help = exit::help(Cmd::Reap))]
    Reap(ReapArgs),
    /// Print a node's data (with -r, a tree's) and then every change; or run a command on every change.
    ///
    /// Without a command: a line per node first (`created PATH "DATA"`), then `initialized`, then a line per change
    /// (`created`, `changed`, `deleted`), until SIGINT or SIGTERM. With `-- CMD`: runs CMD once the first read is
    /// done and again after every change followed by --debounce of quiet, never two at once, as `consul watch`
    /// does; CMD reads the node's data on its standard input (with -r: a JSON object of every path's data) and
    /// finds it in ZKLOCK_WATCH_VALUE (ZKLOCK_WATCH_EXISTS, ZKLOCK_WATCH_VERSION; with -r ZKLOCK_WATCH_NODES). A
    /// CMD that fails is reported and the watch goes on. The session reconnects, and makes a new one when it
    /// expires: what changed meanwhile is reported then (or makes a run). Needs ZooKeeper 3.6+ (persistent
    /// watches) or zklock serve.
    #[command(after_long_help = exit::help(Cmd::Watch))]
    Watch(WatchArgs),
    /// Register a service instance (curator-x-discovery's layout) while a command runs.
    ///
    /// PATH is BASE/NAME (e.g. /services/api): the instance is the ephemeral node BASE/NAME/ID holding Curator's
    /// instance JSON (name, id, address, port, payload, registrationTimeUTC…), so Curator's ServiceDiscovery and
    /// `zklock discover` find it. It is kept through reconnections and session expiry (made again with the same
    /// ID) and removed when the command ends — or, without a command, on SIGINT or SIGTERM. The command gets
    /// ZKLOCK_SERVICE_PATH and ZKLOCK_SERVICE_ID; its signals are forwarded and its exit status is ours.
    #[command(after_long_help = exit::help(Cmd::Register))]
    Register(RegisterArgs),
    /// List a service's instances (curator-x-discovery's layout); with --watch, again after every change.
    #[command(after_long_help = exit::help(Cmd::Discover))]
    Discover(DiscoverArgs),
    /// Print a shell completion script, e.g. `zklock completions bash > /etc/bash_completion.d/zklock`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `zklock man > /usr/local/share/man/man1/zklock.1`.
    Man,
}

/// Arguments of `zklock run`. Without `--shared`, `--write` or `--leases` it takes a mutex (Curator's
/// `InterProcessMutex` layout); the kinds of lock do not exclude each other, so `run` refuses a PATH in use by
/// another kind (see `run.rs`).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Take the read (shared) side of a read/write lock on PATH: any number of `--shared` commands run at once,
    /// none while a `--write` command runs or waits ahead. Pairs with `--write`, not with a plain `run` (a mutex,
    /// which a read/write lock does not exclude): `zklock run` refuses (exit 64) a PATH in use by another kind of
    /// lock. Curator's `InterProcessReadWriteLock` layout.
    #[arg(long, short = 's', conflicts_with_all = ["write", "leases"])]
    pub shared: bool,
    /// Take the write (exclusive) side of the read/write lock on PATH: alone, excluding `--shared` commands and
    /// other `--write` commands.
    #[arg(long, conflicts_with = "leases")]
    pub write: bool,
    /// Take one of N leases of a semaphore on PATH: at most N commands run at once. Every `run --leases` on the
    /// same PATH must give the same N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub leases: Option<u32>,
    /// Fail at once (exit 1, or --conflict-exit-code) if the lock is held or queued for (with --leases: no lease
    /// free, or another acquirer ahead). With -q, silently.
    #[arg(long, short = 'n', conflicts_with = "timeout")]
    pub nonblock: bool,
    /// Give up (exit 1, or --conflict-exit-code) after waiting this long (a duration: 30, 1.5, 30s, 1m30s, 250ms).
    /// It bounds the wait for our turn, not the making of our node: -w 0 takes a free lock, as flock -w 0 does.
    /// With -q, silently.
    #[arg(long, short = 'w', value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub conflict: ConflictArgs,
    /// After the lock is lost, the time between SIGTERM and SIGKILL to the command. The lock counts as lost early
    /// enough that the command is gone before ZooKeeper can expire our session; if zklock itself is paused or
    /// starved, its watchdog stops the command in time on its own.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true)]
    pub kill_after: f64,
    /// What an outage does to the running command once zklock can no longer confirm its ZooKeeper session: `stop`
    /// (the default) suspends it — SIGSTOP to its process group, before the session could expire — and continues
    /// it (SIGCONT) when a heartbeat through the leader finds the session and our lock node alive: same lock, same
    /// fencing token, so an outage shorter than the session costs a pause, not the job; it is killed (SIGKILL) if
    /// the session is lost after all. `kill` ends it instead (SIGTERM, then SIGKILL after --kill-after) and `run`
    /// exits 75 (the only behaviour before --on-suspend existed). A stopped command runs no code; what it wrote before may still be in the
    /// kernel's buffers (the fencing token covers that, either way).
    #[arg(long, value_enum, default_value_t = OnSuspend::Stop, value_name = "ACTION")]
    pub on_suspend: OnSuspend,
    #[command(flatten)]
    pub describe: DescribeArgs,
    #[command(flatten)]
    pub log: LogArgs,
    /// The lock directory, e.g. /locks/nightly-backup.
    #[arg(value_parser = recipe_path)]
    pub path: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    // With the security options, under their heading.
    #[command(flatten)]
    pub acl: AclArgs,
}

/// Arguments of `zklock elect`.
#[derive(Debug, Args)]
pub struct ElectArgs {
    /// Fail at once (exit 1, or --conflict-exit-code) unless we lead at once: another candidate leads or is queued
    /// ahead. Our candidacy is withdrawn. With -q, silently.
    #[arg(long, short = 'n', conflicts_with = "timeout")]
    pub nonblock: bool,
    /// Give up campaigning (exit 1, or --conflict-exit-code; candidacy withdrawn) if we do not lead within this
    /// long (a duration: 30, 1.5, 30s, 1m30s, 250ms). With -q, silently.
    #[arg(long, short = 'w', value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub conflict: ConflictArgs,
    /// After leadership is lost, the time between SIGTERM and SIGKILL to the command.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true)]
    pub kill_after: f64,
    /// What an outage does to the running command once zklock can no longer confirm its session: `stop` (the
    /// default) suspends it (SIGSTOP) and continues it (SIGCONT) when the session and our node are confirmed again —
    /// the same term, the same fencing token — and kills it if leadership is lost after all; `kill` ends it (and,
    /// without --exit-on-expiry, zklock campaigns again). As `zklock run --on-suspend`.
    #[arg(long, value_enum, default_value_t = OnSuspend::Stop, value_name = "ACTION")]
    pub on_suspend: OnSuspend,
    #[command(flatten)]
    pub describe: DescribeArgs,
    #[command(flatten)]
    pub log: LogArgs,
    /// Exit 4 when leadership is lost with our ZooKeeper session (it expired, the connection was down too long, or
    /// zklock could not confirm it in time), as when it is taken away. Without it zklock stops the command as
    /// always, then makes a new session and campaigns again, and runs the command again once it leads again.
    #[arg(long)]
    pub exit_on_expiry: bool,
    /// Do not campaign and run no command: print the current leader (node, fencing token, session, data; or "no
    /// leader") at once and again on every change, one line each, until SIGINT or SIGTERM (exit 0).
    #[arg(
        long,
        conflicts_with_all = [
            "nonblock",
            "timeout",
            "conflict_exit_code",
            "kill_after",
            "on_suspend",
            "describe",
            "no_describe",
            "exit_on_expiry",
            "command"
        ]
    )]
    pub observe: bool,
    /// With --observe: one JSON object per line, `{"path", "leader": {"node", "fencing_token", "session_id",
    /// "data"} | null}`.
    #[arg(long, requires = "observe", conflicts_with = "command")]
    pub json: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while campaigning: zklock_elect_leader (1 while this process
    /// leads PATH, else 0), zklock_elect_fencing_token (the term's token while leading) and the library's metrics
    /// (waits, guards lost, suspended, resumed), e.g. --metrics 127.0.0.1:9142.
    #[arg(long, value_name = "ADDR", value_parser = socket_addr, conflicts_with = "observe")]
    pub metrics: Option<std::net::SocketAddr>,
    /// The election directory, e.g. /elections/scheduler.
    #[arg(value_parser = recipe_path)]
    pub path: String,
    /// The command and its arguments (after `--`); none with --observe.
    #[arg(last = true, required_unless_present = "observe")]
    pub command: Vec<String>,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    // With the security options, under their heading.
    #[command(flatten)]
    pub acl: AclArgs,
}

/// What `run` and `elect` store in their node, for `zklock status` and observers: see `supervise::describe`.
#[derive(Debug, Clone, Default, Args)]
pub struct DescribeArgs {
    /// Free text stored in our node for `zklock status` (and observers of an election) instead of the command
    /// line: the node holds `host=… pid=… note=TEXT`. Without it the node holds `host=… pid=… cmd=COMMAND LINE`,
    /// cut to 4 KiB, with what looks like a credential replaced by *** (the value of --password, --token, secret=,
    /// api-key=…, the password of a URL's user:password@, mysql's -pSECRET and the password flags of other known
    /// clients: docs/cli.md lists the rules); anybody who may read the node sees it.
    #[arg(long, value_name = "TEXT")]
    pub describe: Option<String>,
    /// Store no command line in our node: only `host=… pid=…`.
    #[arg(long, conflicts_with = "describe")]
    pub no_describe: bool,
}

/// The exit status when the lock or leadership is not had: busy (`--nonblock`) or `--timeout` passed.
#[derive(Debug, Clone, Default, Args)]
pub struct ConflictArgs {
    /// The exit status when busy (--nonblock) or timed out (--timeout), as `flock -E`: 1 by default, which a
    /// command may exit with too. 0 to 255.
    #[arg(long, short = 'E', value_name = "N")]
    pub conflict_exit_code: Option<u8>,
}

impl ConflictArgs {
    /// The status of a conflict.
    pub fn status(&self) -> i32 {
        self.conflict_exit_code.map_or(exit::BUSY, i32::from)
    }
}

/// Arguments of `zklock revoke`.
#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// Revoke this participant instead of the holders: a holder or a waiter, by its node's name (as `zklock status`
    /// shows it) or full path.
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Ask the holder to give up instead of deleting its node (Curator's revocation protocol: its data becomes
    /// `__REVOKE__`). `zklock run`, `zklock elect` and Curator locks made revocable release; others ignore it.
    #[arg(long)]
    pub request: bool,
    /// Show what would be revoked, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The directory of a lock (mutex or read/write lock), a semaphore or an election. Without --node every holder
    /// is revoked: the mutex's holder, all readers sharing a read/write lock, every lease holder, the leader.
    #[arg(value_parser = recipe_path)]
    pub path: String,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `zklock reap`.
#[derive(Debug, Args)]
pub struct ReapArgs {
    /// Show what would be removed, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The prefix: PATH itself and everything below it (/ for the whole tree).
    #[arg(value_parser = tree_path)]
    pub path: String,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object (path, recipe, holders with their fencing tokens, waiters in order, counts) instead
    /// of the human view.
    #[arg(long)]
    pub json: bool,
    /// Exit 0 if somebody holds it (a lock's holder or readers, the leader, a semaphore lease, members inside a
    /// double barrier), 1 if not (also when it does not exist; a queue is never held). Output is unchanged.
    #[arg(long)]
    pub check: bool,
    /// Every recipe under PATH (PATH included), one line each — the recipe, how many hold and since when, how
    /// many wait — or with --json an array of the objects --json prints; --check then tells whether any is held.
    /// At most 10,000 nodes are looked at.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Print again after every change (a cache of the directory, or with -r the tree, tells when), each view
    /// headed by the time it was taken, until SIGINT or SIGTERM (exit 0). With --json, one JSON line per view.
    #[arg(long, conflicts_with = "check")]
    pub watch: bool,
    /// The recipe directory (a lock, an election, a semaphore, a queue, a barrier).
    #[arg(value_parser = tree_path)]
    pub path: String,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `zklock watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Watch every node below PATH too; without it, PATH alone.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// One JSON object per line instead: {"event", "path", "data", "version", "mzxid", "observed_ms"} ("nodes"
    /// with `initialized`).
    #[arg(long, conflicts_with = "command")]
    pub json: bool,
    /// With a command: how long the changes must have settled before it runs (a duration: 200ms, 1s, 0).
    #[arg(long, default_value = "200ms", value_name = "DURATION", value_parser = seconds)]
    pub debounce: f64,
    /// The node to watch (with -r, the top of the tree), e.g. /config/app. It need not exist yet.
    #[arg(value_parser = tree_path)]
    pub path: String,
    /// The command and its arguments (after `--`), run once at the start and after every settled change.
    #[arg(last = true)]
    pub command: Vec<String>,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `zklock register`.
#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// Where the instance listens, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub address: String,
    /// The instance's id (its node's name) [default: a fresh uuid]. Give the same one after a restart to keep it.
    #[arg(long)]
    pub id: Option<String>,
    /// The instance's payload, a JSON value (Curator's payload).
    #[arg(long, value_name = "JSON")]
    pub payload: Option<String>,
    /// The service, BASE/NAME, e.g. /services/api.
    #[arg(value_parser = recipe_path)]
    pub path: String,
    /// The command and its arguments (after `--`): the instance is registered while it runs.
    #[arg(last = true)]
    pub command: Vec<String>,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `zklock discover`.
#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// One JSON array of the instances (Curator's instance objects) instead of a line each.
    #[arg(long)]
    pub json: bool,
    /// Print the instances again after every change, until SIGINT or SIGTERM.
    #[arg(long)]
    pub watch: bool,
    /// The service, BASE/NAME, e.g. /services/api.
    #[arg(value_parser = recipe_path)]
    pub path: String,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `zklock counter`.
#[derive(Debug, Args)]
pub struct CounterArgs {
    /// The counter's layout: `long` (8 bytes, Curator's DistributedAtomicLong) or `shared` (4 bytes, Curator's
    /// SharedCount). [default: what the node holds — 4 bytes a shared count, 8 a long; a new counter is a long]
    /// A node without data, or whose 4 or 8 bytes read as text (such as `data`), is taken for a counter only with
    /// --kind; counters within ±150,000,000 never read as text.
    #[arg(long, value_enum)]
    pub kind: Option<CounterKind>,
    /// Print one JSON object (path, kind, value; the value before the change for set and add; the node's version
    /// for get) instead of the value alone.
    #[arg(long)]
    pub json: bool,
    /// What to do.
    #[arg(value_enum)]
    pub action: CounterAction,
    /// The counter's node, e.g. /counters/orders.
    #[arg(value_parser = recipe_path)]
    pub path: String,
    /// set: the new value; add: what to add (default 1; a negative number subtracts).
    #[arg(allow_negative_numbers = true)]
    pub value: Option<i64>,
    // Last: the help heading of its security options ("Authentication and TLS") would otherwise take the
    // options after it.
    #[command(flatten)]
    pub connect: ConnectArgs,
    // With the security options, under their heading.
    #[command(flatten)]
    pub acl: AclArgs,
}

/// `zklock counter ACTION`.
/// `--on-suspend`: what `run` and `elect` do to the command while the session cannot be confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnSuspend {
    /// End it (SIGTERM, then SIGKILL): the behaviour before `--on-suspend` existed.
    Kill,
    /// Suspend it (SIGSTOP) and continue it (SIGCONT) when the session is confirmed again (the default).
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CounterAction {
    /// Print the value (0, or a shared count's 0, if the node does not exist).
    Get,
    /// Set the value.
    Set,
    /// Add to the value.
    Add,
}

/// `zklock counter --kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CounterKind {
    /// 8 bytes, big-endian: Curator's DistributedAtomicLong.
    Long,
    /// 4 bytes, big-endian: Curator's SharedCount.
    Shared,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub connect: OptionalConnectArgs,
    #[command(flatten)]
    pub security: SecurityArgs,
    #[command(flatten)]
    pub acl: AclArgs,
    /// Number of workers, each with its own session.
    #[arg(long, default_value_t = 10)]
    pub workers: usize,
    /// How long each worker holds the lock, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub hold: u64,
    /// The lock directory.
    #[arg(long, default_value = "/disLocks", value_parser = recipe_path)]
    pub path: String,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub connect: OptionalConnectArgs,
    /// Time per measurement (a duration: 5, 1.5, 5s, 500ms).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = seconds, allow_negative_numbers = true, help_heading = "Benchmark")]
    pub duration: f64,
    /// Clients for the contended measurement.
    #[arg(long, default_value_t = 8, help_heading = "Benchmark")]
    pub clients: usize,
    /// Rounds; each runs every implementation once (in a rotating order). Figures are medians over the rounds.
    #[arg(long, default_value_t = 3, help_heading = "Benchmark")]
    pub rounds: usize,
    // Last: its help heading ("Authentication and TLS") would otherwise take the options after it (issue 33.9).
    #[command(flatten)]
    pub security: SecurityArgs,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT with an IP address or a host name (its first address) [default:
    /// 127.0.0.1:2181, or clientPortAddress/clientPort of --config, which this overrides].
    #[arg(long, value_name = "ADDR", value_parser = socket_addr)]
    pub listen: Option<std::net::SocketAddr>,
    /// Data directory (overrides dataDir of --config); a temporary one if neither is given.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// A zoo.cfg file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// SASL DIGEST-MD5 for clients: a JAAS file whose `Server` section lists the users, the file real ZooKeeper
    /// reads (`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="secret"; };`).
    /// Overrides the zoo.cfg key java.security.auth.login.config. Clients that authenticate get the id sasl:USER;
    /// SASL is offered, not required, unless --require-sasl (or sessionRequireClientSASLAuth=true in --config).
    #[arg(long, value_name = "FILE")]
    pub jaas: Option<PathBuf>,
    /// Refuse every request of a client that has not authenticated with SASL (ZooKeeper's
    /// sessionRequireClientSASLAuth=true): it is answered SessionClosedRequireSaslAuth and its connection closed.
    /// Needs --jaas (or java.security.auth.login.config in --config).
    #[arg(long)]
    pub require_sasl: bool,
    /// Accept TTL nodes (createTTL, CreateMode PERSISTENT_WITH_TTL…), reaped once their TTL has passed without a
    /// change or a child, as ZooKeeper does with zookeeper.extendedTypesEnabled=true (extendedTypesEnabled=true in
    /// --config). Without it, a TTL create is answered Unimplemented, as by ZooKeeper.
    #[arg(long)]
    pub extended_types: bool,
    /// Read the configuration, print where the server would listen and keep its data, and exit without serving.
    #[arg(long)]
    pub dry_run: bool,
    /// Serve Prometheus metrics (the figures of the `mntr` four-letter word, named as its keys: zk_znode_count,
    /// zk_num_alive_connections, ...) over HTTP at http://ADDR/metrics, e.g. --metrics 127.0.0.1:9141.
    #[arg(long, value_name = "ADDR", value_parser = socket_addr)]
    pub metrics: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub log: LogArgs,
    /// Where SIGUSR1 writes a backup while serving: a new data directory DIR/backup-<UTC time> holding the state of
    /// that moment (every acknowledged write), which `zklock serve --data-dir DIR/backup-…` restores.
    #[arg(long, value_name = "DIR")]
    pub backup_dir: Option<PathBuf>,
}

/// `--log-format` of `serve`, `run` and `elect`: the commands that run as services or under a supervisor.
#[derive(Debug, Clone, Default, Args)]
pub struct LogArgs {
    /// The format of stderr: `text` (for people) or `json` (one JSON object per line, for log collectors: the log's
    /// events and zklock's own lines, "lost the lock; stopping the command" and the final error with its
    /// `exit_status`, alike).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,
}

impl LogArgs {
    /// Whether stderr is JSON lines.
    pub fn json(&self) -> bool {
        self.log_format == LogFormat::Json
    }
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `message` and the event's fields.
    Json,
}
