//! The parsers of the flags' values (clap `value_parser`s and what `zk.rs` reads from the environment and files):
//! connect strings, paths, durations, addresses, credentials, ACLs and SASL. Each checks everything it can before
//! anything connects, and its message says what was expected.

use std::time::Duration;

use base64::Engine as _;
use zookeeper_client::{Acl, AuthId, Permission};

/// The SASL mechanisms of `--sasl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// DIGEST-MD5: a user and password of the server's JAAS `Server` section (`DigestLoginModule`).
    DigestMd5,
    /// GSSAPI: Kerberos, with a ticket from the ticket cache or a keytab (zklock-cli's `sasl-gssapi` feature).
    Gssapi,
}

impl SaslMechanism {
    /// The mechanism's SASL name.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::DigestMd5 => "DIGEST-MD5",
            SaslMechanism::Gssapi => "GSSAPI",
        }
    }
}

/// `--sasl MECHANISM[:USER]`: how to authenticate with SASL, but for the password or the ticket (read in `zk.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSpec {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// Who we are: always given for DIGEST-MD5; for GSSAPI the principal we expect to be (`bob@REALM`), or `None`
    /// for whichever the ticket cache or the keytab holds.
    pub user: Option<String>,
}

/// What `--sasl` expects.
const SASL_EXPECTED: &str = "expected digest-md5:USER or gssapi[:PRINCIPAL]";

/// `digest-md5:USER` or `gssapi[:PRINCIPAL]` ([`SaslSpec`]). The mechanism's name is case-insensitive, as SASL's
/// are. GSSAPI is refused, saying so, by a binary built without the `sasl-gssapi` feature.
pub fn sasl_spec(text: &str) -> Result<SaslSpec, String> {
    let (mechanism, user) = text.split_once(':').unwrap_or((text, ""));
    match mechanism.to_ascii_lowercase().as_str() {
        "digest-md5" => {
            if user.is_empty() {
                return Err("expected digest-md5:USER: no user".to_owned());
            }
            if user.contains(':') {
                return Err(
                    "expected digest-md5:USER: the password goes in ZKLOCK_SASL_PASSWORD or \
                     --sasl-password-file, never on the command line"
                        .to_owned(),
                );
            }
            Ok(SaslSpec {
                mechanism: SaslMechanism::DigestMd5,
                user: Some(user.to_owned()),
            })
        }
        "gssapi" | "kerberos" if !cfg!(feature = "sasl-gssapi") => Err(
            "this zklock was built without Kerberos (GSSAPI): build it with the cargo feature sasl-gssapi \
             (cargo install zklock-cli --features sasl-gssapi; it needs MIT Kerberos headers and libclang, \
             Debian: libkrb5-dev libclang-dev)"
                .to_owned(),
        ),
        "gssapi" | "kerberos" => {
            if user.contains(':') || user.chars().any(char::is_whitespace) {
                return Err(
                    "expected gssapi[:PRINCIPAL], e.g. gssapi:bob@EXAMPLE.COM: a principal has no ':' or \
                     white space (a password never goes on the command line: kinit, or --keytab)"
                        .to_owned(),
                );
            }
            Ok(SaslSpec {
                mechanism: SaslMechanism::Gssapi,
                user: (!user.is_empty()).then(|| user.to_owned()),
            })
        }
        _ => Err(SASL_EXPECTED.to_owned()),
    }
}

/// One `SCHEME:CREDENTIALS` to authenticate with (`--auth`, `ZKLOCK_AUTH`, `--auth-file`). Its `Debug` hides the
/// credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The authentication scheme, e.g. `digest`.
    pub scheme: String,
    /// What the scheme takes, e.g. `alice:secret` for `digest`.
    pub credentials: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("scheme", &self.scheme)
            .field("credentials", &"<hidden>")
            .finish()
    }
}

/// A `SCHEME:CREDENTIALS` ([`Credential`]). Errors never repeat the credentials, so that a bad `ZKLOCK_AUTH` or
/// `--auth-file` line is not shown on a terminal or in a log.
pub fn credential(text: &str) -> Result<Credential, String> {
    let Some((scheme, credentials)) = text.split_once(':') else {
        return Err("expected SCHEME:CREDENTIALS, e.g. digest:alice:secret".to_owned());
    };
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err("expected SCHEME:CREDENTIALS, e.g. digest:alice:secret: a bad scheme".to_owned());
    }
    if credentials.is_empty() {
        return Err(format!("no credentials after {scheme}:"));
    }
    if scheme == "digest"
        && credentials
            .split_once(':')
            .is_none_or(|(user, _)| user.is_empty())
    {
        return Err("digest credentials are USER:PASSWORD, e.g. digest:alice:secret".to_owned());
    }
    Ok(Credential {
        scheme: scheme.to_owned(),
        credentials: credentials.to_owned(),
    })
}

/// An ACL given to `--acl` or `--parent-acl`: ZooKeeper ACL entries, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclSpec {
    /// The entries, as ZooKeeper takes them (`creator` is ZooKeeper's `auth` scheme).
    pub entries: Vec<Acl>,
}

/// `world`, `creator`, `digest:USER:HASH` or `sasl:USER`, each optionally `:PERMS`, separated by commas (see
/// [`AclArgs`]).
/// ZooKeeper's own spellings `world:anyone[:PERMS]` and `auth::PERMS` are taken too. A digest's HASH must be what
/// ZooKeeper stores, base64(sha1(USER:PASSWORD)) — 28 characters — so that a password given by mistake is refused
/// rather than made into an ACL nobody can match.
pub fn acl_spec(text: &str) -> Result<AclSpec, String> {
    const FORMS: &str =
        "expected world, creator, digest:USER:HASH or sasl:USER, each optionally :PERMS (letters of cdrwa)";
    let mut entries = Vec::new();
    for entry in text.split(',').map(str::trim) {
        let parts: Vec<&str> = entry.split(':').collect();
        let (id, perms) = match parts[..] {
            ["world" | "anyone"] | ["world", "anyone"] => (AuthId::anyone(), None),
            ["world" | "anyone", perms] | ["world", "anyone", perms] => (AuthId::anyone(), Some(perms)),
            ["creator"] | ["auth"] | ["auth", ""] => (AuthId::authed(), None),
            ["creator", perms] | ["auth", "", perms] => (AuthId::authed(), Some(perms)),
            ["sasl", user] | ["sasl", user, _] => {
                if user.is_empty() {
                    return Err(format!("{entry:?}: no user"));
                }
                (AuthId::new("sasl", user), parts.get(2).copied())
            }
            ["digest", user, hash] | ["digest", user, hash, _] => {
                if user.is_empty() {
                    return Err(format!("{entry:?}: no user"));
                }
                let decoded = base64::engine::general_purpose::STANDARD.decode(hash);
                if !decoded.is_ok_and(|digest| digest.len() == 20) {
                    return Err(format!(
                        "{entry:?}: HASH must be base64(sha1(USER:PASSWORD)) (28 characters), not the password: \
                         printf '%s' '{user}:PASSWORD' | openssl dgst -binary -sha1 | base64"
                    ));
                }
                (
                    AuthId::new("digest", &format!("{user}:{hash}")),
                    parts.get(3).copied(),
                )
            }
            [""] => return Err("an empty entry".to_owned()),
            _ => return Err(format!("{entry:?}: {FORMS}")),
        };
        let permission = match perms {
            None => Permission::ALL,
            Some(perms) => permissions(perms).map_err(|why| format!("{entry:?}: {why}"))?,
        };
        entries.push(Acl::new(permission, id));
    }
    Ok(AclSpec { entries })
}

/// ZooKeeper's permission letters: c(reate), d(elete), r(ead), w(rite), a(dmin).
fn permissions(letters: &str) -> Result<Permission, String> {
    if letters.is_empty() {
        return Err("no permissions after ':' (letters of cdrwa)".to_owned());
    }
    letters.chars().try_fold(Permission::NONE, |all, letter| {
        let one = match letter.to_ascii_lowercase() {
            'c' => Permission::CREATE,
            'd' => Permission::DELETE,
            'r' => Permission::READ,
            'w' => Permission::WRITE,
            'a' => Permission::ADMIN,
            _ => return Err(format!("unknown permission {letter:?} (letters of cdrwa)")),
        };
        Ok(all | one)
    })
}

/// `HOST:PORT` to an address: an IP address as it is, a host name resolved (`localhost:2181`), its first address.
pub fn socket_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs as _;
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    if !text.contains(':') {
        return Err(format!("{text:?} is not HOST:PORT"));
    }
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {text:?}: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// Where `zklock serve` listens without `--listen` or `--config`: ZooKeeper's usual client port, on loopback only.
pub const SERVE_DEFAULT_LISTEN: std::net::SocketAddr =
    std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 2181);

/// The longest duration any flag takes: beyond it a value is a mistake (or `inf`), not a wish.
const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// A duration flag, as seconds: a bare number of seconds (`30`, `1.5`, for compatibility with earlier versions) or
/// a human-friendly duration (`30s`, `1m30s`, `250ms`, `2h`). Infinite, NaN, negative and absurd (more than a year)
/// values are refused, so that every later conversion to a [`Duration`] is safe.
pub fn seconds(text: &str) -> Result<f64, String> {
    let text = text.trim();
    const EXAMPLES: &str = "use e.g. 30, 1.5, 30s, 1m30s or 250ms";
    let duration = if let Ok(secs) = text.parse::<f64>() {
        if secs.is_nan() {
            return Err(format!("not a number; {EXAMPLES}"));
        }
        if secs.is_infinite() && secs > 0.0 {
            return Err(format!("a duration must be finite (at most a year); {EXAMPLES}"));
        }
        if secs < 0.0 {
            return Err("a duration cannot be negative".to_owned());
        }
        if secs > LONGEST.as_secs_f64() {
            return Err("too long: durations are limited to a year".to_owned());
        }
        Duration::from_secs_f64(secs)
    } else if text.starts_with('-') {
        return Err("a duration cannot be negative".to_owned());
    } else {
        humantime::parse_duration(text).map_err(|err| format!("not a duration ({err}); {EXAMPLES}"))?
    };
    if duration > LONGEST {
        return Err("too long: durations are limited to a year".to_owned());
    }
    Ok(duration.as_secs_f64())
}

/// A ZooKeeper connect string, `host:port[,host:port...][/chroot]`, checked before any connection is tried. Each
/// server may be written `host`, `host:port`, `[ipv6]:port`, optionally with `tcp://` or `tcp+tls://` (TLS); a
/// missing port is ZooKeeper's 2181. The chroot, if any, must be a valid absolute ZooKeeper path.
pub fn connect_string(text: &str) -> Result<String, String> {
    let (servers, chroot) = split_chroot(text);
    if servers.is_empty() {
        return Err("no servers: expected host:port[,host:port...][/chroot]".to_owned());
    }
    for server in servers.split(',') {
        check_server(without_scheme(server))
            .map_err(|why| format!("{why} in {server:?}: expected host:port[,host:port...][/chroot]"))?;
    }
    if let Some(chroot) = chroot {
        check_chroot(chroot).map_err(|why| format!("bad chroot {chroot:?}: {why}"))?;
    }
    Ok(text.to_owned())
}

/// A server of a connect string without its `tcp://` or `tcp+tls://`.
pub fn without_scheme(server: &str) -> &str {
    server
        .strip_prefix("tcp://")
        .or_else(|| server.strip_prefix("tcp+tls://"))
        .unwrap_or(server)
}

/// The servers and the chroot: as zookeeper-client reads it, the chroot follows the last server (after its
/// `tcp://` or `tcp+tls://`, if any).
pub fn split_chroot(text: &str) -> (&str, Option<&str>) {
    let last = text.rsplit(',').next().unwrap_or(text);
    let offset = text.len() - last.len();
    let body = last.len() - without_scheme(last).len();
    match last[body..].find('/') {
        Some(i) => (&text[..offset + body + i], Some(&text[offset + body + i..])),
        None => (text, None),
    }
}

fn check_server(server: &str) -> Result<(), String> {
    if server.is_empty() {
        return Err("an empty server".to_owned());
    }
    let (host, port) = if let Some(rest) = server.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("an unclosed '['")?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':').ok_or("junk after ']'")?)),
        }
    } else {
        match server.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (server, None),
        }
    };
    if host.is_empty() {
        return Err("no host".to_owned());
    }
    let bracketed = server.starts_with('[');
    if host.contains([' ', '[', ']', '/']) || (!bracketed && host.contains(':')) {
        return Err(format!("a bad host {host:?}"));
    }
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(1..) => {}
            _ => return Err(format!("a bad port {port:?} (1 to 65535)")),
        }
    }
    Ok(())
}

/// A recipe's PATH (`run`, `elect`, `counter`, `revoke`, `demo --path`): a ZooKeeper path ([`tree_path`]), and not
/// the root.
pub fn recipe_path(text: &str) -> Result<String, String> {
    if text == "/" {
        return Err(
            "invalid path: the root / is not a recipe's path; give its directory, e.g. /locks/backup"
                .to_owned(),
        );
    }
    tree_path(text)
}

/// A PATH checked before anything is connected, so that a mistake is a usage error (exit 2) even when ZooKeeper
/// cannot be reached: absolute, no trailing `/`, no empty, `.` or `..` node name, no control character (as
/// ZooKeeper checks it), and not in ZooKeeper's own `/zookeeper` tree. The root `/` is one (`status /`, `reap /`).
pub fn tree_path(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("invalid path: empty; give an absolute path, e.g. /locks/backup".to_owned());
    }
    if !text.starts_with('/') {
        return Err(format!(
            "invalid path: relative; ZooKeeper paths start with / (did you mean /{text}?)"
        ));
    }
    check_path(text).map_err(|why| format!("invalid path: {why}"))?;
    if text == "/zookeeper" || text.starts_with("/zookeeper/") {
        return Err(
            "invalid path: /zookeeper is ZooKeeper's own tree (quotas, config); choose another path"
                .to_owned(),
        );
    }
    Ok(text.to_owned())
}

fn check_chroot(chroot: &str) -> Result<(), &'static str> {
    check_path(chroot)
}

/// An absolute path as ZooKeeper takes it.
fn check_path(path: &str) -> Result<(), &'static str> {
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err("it ends with '/'");
    }
    for name in path[1..].split('/') {
        match name {
            "" => return Err("it has an empty node name"),
            "." | ".." => return Err("relative paths are not allowed"),
            _ if name.chars().any(char::is_control) => return Err("it has control characters"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sasl_takes_a_mechanism_and_a_user_never_a_password() {
        let bob = SaslSpec {
            mechanism: SaslMechanism::DigestMd5,
            user: Some("bob".to_owned()),
        };
        assert_eq!(sasl_spec("digest-md5:bob"), Ok(bob.clone()));
        assert_eq!(sasl_spec("DIGEST-MD5:bob"), Ok(bob));
        for (bad, why) in [
            ("digest-md5:bob:hunter2", "never on the command line"),
            ("digest-md5:", "no user"),
            ("digest-md5", "no user"),
            ("plain:bob", SASL_EXPECTED),
            ("", SASL_EXPECTED),
        ] {
            let err = sasl_spec(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
    }

    #[test]
    #[cfg(feature = "sasl-gssapi")]
    fn gssapi_takes_an_optional_principal() {
        let gssapi = |user: Option<&str>| SaslSpec {
            mechanism: SaslMechanism::Gssapi,
            user: user.map(str::to_owned),
        };
        assert_eq!(sasl_spec("gssapi"), Ok(gssapi(None)));
        assert_eq!(sasl_spec("gssapi:"), Ok(gssapi(None)));
        assert_eq!(
            sasl_spec("GSSAPI:bob@EXAMPLE.COM"),
            Ok(gssapi(Some("bob@EXAMPLE.COM")))
        );
        assert_eq!(sasl_spec("kerberos:bob"), Ok(gssapi(Some("bob"))));
        for bad in ["gssapi:bob:hunter2", "gssapi:bob smith"] {
            let err = sasl_spec(bad).expect_err(bad);
            assert!(err.contains("expected gssapi[:PRINCIPAL]"), "{bad}: {err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
    }

    #[test]
    #[cfg(not(feature = "sasl-gssapi"))]
    fn gssapi_is_refused_by_a_binary_built_without_it() {
        for spec in ["gssapi", "gssapi:bob@EXAMPLE.COM", "kerberos"] {
            let err = sasl_spec(spec).expect_err(spec);
            assert!(err.contains("built without Kerberos"), "{spec}: {err}");
            assert!(err.contains("--features sasl-gssapi"), "{spec}: {err}");
        }
    }

    #[test]
    fn acls_take_sasl_entries() {
        let spec = acl_spec("sasl:bob,sasl:alice:r,world:r").unwrap();
        assert_eq!(
            spec.entries,
            vec![
                Acl::new(Permission::ALL, AuthId::new("sasl", "bob")),
                Acl::new(Permission::READ, AuthId::new("sasl", "alice")),
                Acl::new(Permission::READ, AuthId::anyone()),
            ]
        );
        assert!(acl_spec("sasl:").unwrap_err().contains("no user"));
        assert!(acl_spec("sasl:bob:xyz")
            .unwrap_err()
            .contains("unknown permission"));
    }

    #[test]
    fn durations_take_seconds_and_human_forms() {
        for (text, secs) in [
            ("30", 30.0),
            ("1.5", 1.5),
            ("0", 0.0),
            ("30s", 30.0),
            ("1m30s", 90.0),
            ("250ms", 0.25),
            ("2h", 7200.0),
            (" 5 ", 5.0),
        ] {
            assert_eq!(seconds(text), Ok(secs), "{text}");
        }
        for text in [
            "inf",
            "-inf",
            "infinity",
            "NaN",
            "nan",
            "-5",
            "-5s",
            "-0.1",
            "1e30",
            "400days",
            "",
            "5 parsecs",
            "abc",
        ] {
            let err = seconds(text).expect_err(text);
            assert!(!err.is_empty(), "{text}");
        }
        assert!(seconds("1e30").unwrap_err().contains("a year"));
        assert!(seconds("-5").unwrap_err().contains("negative"));
        assert!(seconds("inf").unwrap_err().contains("finite"));
    }

    #[test]
    fn connect_strings_are_checked() {
        for good in [
            "127.0.0.1:2181",
            "zk1:2181,zk2:2181,zk3:2181/app",
            "zk1",
            "[::1]:2181",
            "tcp://zk1:2181,tcp://zk2:2181/chroot/deeper",
            "h:1/",
        ] {
            assert_eq!(connect_string(good).as_deref(), Ok(good), "{good}");
        }
        for bad in [
            "",
            "/chroot",
            "zk1:99999",
            "zk1:0",
            "zk1:port",
            "zk1:2181,,zk2:2181",
            ":2181",
            "zk1:2181/app/",
            "zk1:2181/a//b",
            "zk1:2181/a/../b",
            "[::1:2181",
            "zk1:2181 zk2:2181",
            "zk1/x:2181,zk2:2181",
            "tcp+tls://",
            "tcp+tls://zk1:0",
        ] {
            assert!(connect_string(bad).is_err(), "{bad}");
        }
        for good in [
            "tcp+tls://zk1:2281",
            "tcp+tls://zk1:2281,tcp://zk2:2181/app",
            "zk1:2281,tcp+tls://zk2/app",
        ] {
            assert_eq!(connect_string(good).as_deref(), Ok(good), "{good}");
        }
        assert_eq!(
            split_chroot("tcp+tls://zk1:2281/app"),
            ("tcp+tls://zk1:2281", Some("/app"))
        );
    }

    #[test]
    fn credentials_are_checked_without_repeating_them() {
        let alice = credential("digest:alice:pass:with:colons,and,commas").unwrap();
        assert_eq!(
            (alice.scheme.as_str(), alice.credentials.as_str()),
            ("digest", "alice:pass:with:colons,and,commas")
        );
        assert!(
            !format!("{alice:?}").contains("pass"),
            "Debug hides the credentials"
        );
        assert_eq!(credential("x509:anything").unwrap().scheme, "x509");
        for bad in [
            "hunter2",
            ":hunter2",
            "digest:",
            "digest:hunter2",
            "digest::hunter2",
            "a b:hunter2",
        ] {
            let err = credential(bad).expect_err(bad);
            assert!(!err.contains("hunter2"), "{bad}: {err}");
        }
    }

    #[test]
    fn acls_take_zookeepers_forms() {
        let all = |id: AuthId| Acl::new(Permission::ALL, id);
        let hash = "xQJmxLMiHGwaqBvst5y6rkB6HQs="; // base64(sha1("super:admin")), as ZooKeeper documents it
        let bob = AuthId::new("digest", &format!("bob:{hash}"));
        for (text, entries) in [
            ("world", vec![all(AuthId::anyone())]),
            ("world:anyone:cdrwa", vec![all(AuthId::anyone())]),
            ("creator", vec![all(AuthId::authed())]),
            (
                "auth::rw",
                vec![Acl::new(Permission::READ | Permission::WRITE, AuthId::authed())],
            ),
            (
                &format!("creator, digest:bob:{hash}:r ,world:R"),
                vec![
                    all(AuthId::authed()),
                    Acl::new(Permission::READ, bob.clone()),
                    Acl::new(Permission::READ, AuthId::anyone()),
                ],
            ),
            (&format!("digest:bob:{hash}"), vec![all(bob)]),
        ] {
            assert_eq!(acl_spec(text), Ok(AclSpec { entries }), "{text}");
        }
        for bad in [
            "",
            "creator,",
            "everyone",
            "world:x",
            "creator:",
            "digest:bob",
            "digest::xQJmxLMiHGwaqBvst5y6rkB6HQs=",
            "digest:bob:secret-password",
            "ip:10.0.0.1",
        ] {
            assert!(acl_spec(bad).is_err(), "{bad}");
        }
        assert!(acl_spec("digest:bob:secret-password")
            .unwrap_err()
            .contains("openssl dgst"));
    }
}
