//! ACL checks and the `digest` / `ip` / `world` / `auth` schemes, following ZooKeeper's
//! `PrepRequestProcessor.fixupACL` and `ZooKeeperServer.checkACL`.

use base64::Engine as _;
use std::net::IpAddr;
use zklock_codec::{Acl, ErrorCode, Id};

/// The identities a request is checked against (a connection's [`Identities`]).
pub type AuthIds = [Id];

/// Most identities one connection may hold. ZooKeeper has no bound; one connection sending 100,000 different
/// `digest` auth packets made the list that long, and every add a scan of it (issue 33.19). A client proves a
/// handful; the one that goes past this gets `AuthFailed` and its connection closed, as a failed auth does.
pub const MOST_IDS: usize = 1_000;

/// The identities a connection has proved: always `ip:<peer>`, plus one `digest` id per `auth` request, plus
/// `super` when a digest matched the configured super digest; over TLS with a verified client certificate,
/// `x509:<subject>` (and `super:<subject>` for the configured x509 super user); after SASL, `sasl:<user>`.
/// Shared: every request reads them (ACL checks, watches) and only `auth` and SASL add to them, so a request takes
/// a reference, not a copy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identities(std::sync::Arc<Vec<Id>>);

impl Identities {
    pub fn new(ids: Vec<Id>) -> Identities {
        Identities(std::sync::Arc::new(ids))
    }

    /// Adds `scheme:id` unless the connection has it already; whether the connection holds it now (`false`: it
    /// holds [`MOST_IDS`] and this one is new).
    pub fn add(&mut self, scheme: &str, id: String) -> bool {
        let id = Id {
            scheme: scheme.into(),
            id,
        };
        if self.0.contains(&id) {
            return true;
        }
        if self.0.len() >= MOST_IDS {
            return false;
        }
        std::sync::Arc::make_mut(&mut self.0).push(id);
        true
    }
}

impl std::ops::Deref for Identities {
    type Target = [Id];

    fn deref(&self) -> &[Id] {
        &self.0
    }
}

/// The ids in the order ZooKeeper lists them (creator ACLs, whoAmI). ZooKeeper keeps a connection's ids in a
/// `ConcurrentHashMap`-backed set, so it iterates them by hash bin — `spread(Id.hashCode()) & (table − 1)`,
/// with the default table of 16 bins doubled whenever the set reaches 3/4 of it — and in insertion order
/// within a bin; `auth` (insertion order here) maps onto that. (After a resize Java may reorder a bin; with
/// fewer than 12 ids per connection, which is every real case, the order is exact.)
pub fn in_zookeeper_order(auth: &[Id]) -> Vec<&Id> {
    let mut table = 16usize;
    while auth.len() >= table - table / 4 {
        table *= 2;
    }
    let mut ids: Vec<(usize, usize, &Id)> = auth
        .iter()
        .enumerate()
        .map(|(i, id)| (java_bin(java_id_hash(id), table), i, id))
        .collect();
    ids.sort_unstable_by_key(|&(bin, i, _)| (bin, i));
    ids.into_iter().map(|(_, _, id)| id).collect()
}

/// `String.hashCode()`: over UTF-16 code units, `h = 31·h + c`, wrapping.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The jute-generated `Id.hashCode()`.
fn java_id_hash(id: &Id) -> i32 {
    let h = 17i32.wrapping_mul(37).wrapping_add(java_string_hash(&id.scheme));
    h.wrapping_mul(37).wrapping_add(java_string_hash(&id.id))
}

/// `ConcurrentHashMap`'s bin for a hash: `(h ^ (h >>> 16)) & 0x7fffffff & (table − 1)`.
fn java_bin(hash: i32, table: usize) -> usize {
    let h = hash as u32;
    ((h ^ (h >> 16)) & 0x7fff_ffff) as usize & (table - 1)
}

/// `user:base64(sha1("user:password"))`, ZooKeeper's `DigestAuthenticationProvider.generateDigest`.
pub fn digest_id(user_password: &str) -> String {
    let user = user_password.split_once(':').map_or(user_password, |(u, _)| u);
    let hash = sha1_smol::Sha1::from(user_password.as_bytes()).digest().bytes();
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// The ACL schemes a server knows beyond `world`, `ip` and `digest`, as ZooKeeper registers their providers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Schemes {
    /// `x509`: a secure client port is configured (ZooKeeper's `configureSSLAuth`).
    pub x509: bool,
    /// `sasl`: SASL is configured (ZooKeeper: `authProvider.N=...SASLAuthenticationProvider`, which every SASL
    /// deployment sets beside its JAAS file).
    pub sasl: bool,
}

/// Validates a client ACL and expands the `auth` scheme to the connection's authenticated ids, removing
/// duplicates. Empty ACLs, unknown schemes, malformed ids and `auth` without any identity are `InvalidAcl`. The
/// `x509` and `sasl` schemes are known only when `schemes` says so, as in ZooKeeper.
pub fn fixup(acl: &[Acl], auth: &AuthIds, schemes: Schemes) -> Result<Vec<Acl>, ErrorCode> {
    if acl.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out: Vec<Acl> = Vec::with_capacity(acl.len());
    let mut push = |a: Acl| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    for a in acl {
        match a.id.scheme.as_str() {
            "world" if a.id.id == "anyone" => push(a.clone()),
            "auth" => {
                // Only the ids of providers that authenticate count (ZooKeeper's `isAuthenticated`): digest,
                // x509 and sasl, not ip (implicit for every connection) nor super (no provider).
                let mut any = false;
                for id in in_zookeeper_order(auth)
                    .into_iter()
                    .filter(|id| matches!(id.scheme.as_str(), "digest" | "x509" | "sasl"))
                {
                    any = true;
                    push(Acl {
                        perms: a.perms,
                        id: id.clone(),
                    });
                }
                if !any {
                    return Err(ErrorCode::InvalidAcl);
                }
            }
            // DigestAuthenticationProvider.isValid: `user:hash` as Java's `split(":")` sees it, which drops
            // trailing empty parts (`alice:` is one part, invalid; `alice:h:` two, valid).
            "digest" if a.id.id.trim_end_matches(':').split(':').count() == 2 => push(a.clone()),
            "ip" if parse_ip_pattern(&a.id.id).is_some() => push(a.clone()),
            "x509" if schemes.x509 && valid_x500_name(&a.id.id) => push(a.clone()),
            // SASLAuthenticationProvider.isValid: a Kerberos name (`name`, or `primary[/instance]@REALM`).
            "sasl" if schemes.sasl && valid_kerberos_name(&a.id.id) => push(a.clone()),
            _ => return Err(ErrorCode::InvalidAcl),
        }
    }
    Ok(out)
}

/// Whether `auth` grants `perm` under `acl` (any matching entry suffices; an empty ACL allows everything).
pub fn check(acl: &[Acl], perm: i32, auth: &AuthIds) -> Result<(), ErrorCode> {
    if acl.is_empty() || auth.iter().any(|id| id.scheme == "super") {
        return Ok(());
    }
    for a in acl.iter().filter(|a| a.perms & perm != 0) {
        let ok = match a.id.scheme.as_str() {
            "world" => a.id.id == "anyone",
            "digest" => auth.iter().any(|id| id.scheme == "digest" && id.id == a.id.id),
            "ip" => auth
                .iter()
                .any(|id| id.scheme == "ip" && ip_matches(&a.id.id, &id.id)),
            "x509" => auth.iter().any(|id| id.scheme == "x509" && id.id == a.id.id),
            // SASLAuthenticationProvider.matches: the same id, or the SASL user `super` (on `sasl` entries only).
            "sasl" => auth
                .iter()
                .any(|id| id.scheme == "sasl" && (id.id == a.id.id || id.id == "super")),
            _ => false,
        };
        if ok {
            return Ok(());
        }
    }
    Err(ErrorCode::NoAuth)
}

/// What getACL shows to a caller without ADMIN: digest hashes are hidden, as ZooKeeper 3.8 does.
pub fn redact(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            let mut a = a.clone();
            if a.id.scheme == "digest" {
                let user = a.id.id.split_once(':').map_or(a.id.id.as_str(), |(u, _)| u);
                a.id.id = format!("{user}:x");
            }
            a
        })
        .collect()
}

/// Whether `name` parses as an X.500 distinguished name (what ZooKeeper's `X509AuthenticationProvider.isValid`
/// asks of `new X500Principal(name)`): empty, or `type=value` pairs separated by `,` (or `;`) and `+`, the type a
/// keyword or a dotted OID, with `\`-escapes and quoted values allowed in the value.
fn valid_x500_name(name: &str) -> bool {
    if name.trim().is_empty() {
        return true;
    }
    let mut parts = Vec::new();
    let (mut current, mut escaped, mut quoted) = (String::new(), false, false);
    for c in name.chars() {
        match c {
            _ if escaped => {
                escaped = false;
                current.push(c);
            }
            '\\' => {
                escaped = true;
                current.push(c);
            }
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' | ';' | '+' if !quoted => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    if escaped || quoted {
        return false;
    }
    parts.push(current);
    parts.iter().all(|part| {
        part.split_once('=').is_some_and(|(kind, _)| {
            let kind = kind.trim();
            let kind = kind
                .strip_prefix("OID.")
                .or_else(|| kind.strip_prefix("oid."))
                .unwrap_or(kind);
            let oid = !kind.is_empty()
                && kind
                    .split('.')
                    .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                && kind.contains('.');
            let keyword = !kind.is_empty()
                && kind.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
                && kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
            oid || keyword
        })
    })
}

/// Whether Hadoop's `KerberosName` accepts `name`: without `@` anything, with it `primary[/instance]@realm`, none
/// of the parts holding `/` or `@` (what ZooKeeper's `SASLAuthenticationProvider.isValid` asks).
fn valid_kerberos_name(name: &str) -> bool {
    let Some((principal, realm)) = name.split_once('@') else {
        return true;
    };
    if realm.contains(['/', '@']) {
        return false;
    }
    principal
        .split_once('/')
        .is_none_or(|(_, instance)| !instance.contains('/'))
}

/// Parses `addr` or `addr/bits`.
fn parse_ip_pattern(pattern: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = match pattern.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u32>().ok()?)),
        None => (pattern, None),
    };
    let addr: IpAddr = addr.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some((addr, bits))
}

fn ip_matches(pattern: &str, client: &str) -> bool {
    let (Some((net, bits)), Ok(client)) = (parse_ip_pattern(pattern), client.parse::<IpAddr>()) else {
        return false;
    };
    let (a, b, max): (u128, u128, u32) = match (net, client) {
        (IpAddr::V4(n), IpAddr::V4(c)) => (u32::from(n).into(), u32::from(c).into(), 32),
        (IpAddr::V6(n), IpAddr::V6(c)) => (u128::from(n), u128::from(c), 128),
        _ => return false,
    };
    let shift = max - bits;
    shift >= max || (a >> shift) == (b >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_codec::perms;

    const X509: Schemes = Schemes {
        x509: true,
        sasl: false,
    };

    fn id(scheme: &str, id: &str) -> Id {
        Id {
            scheme: scheme.into(),
            id: id.into(),
        }
    }

    #[test]
    fn digest_matches_zookeeper() {
        // From ZooKeeper's documentation / DigestAuthenticationProvider main().
        assert_eq!(digest_id("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
    }

    #[test]
    fn fixup_rules() {
        let auth = vec![id("ip", "127.0.0.1")];
        assert_eq!(fixup(&[], &auth, Schemes::default()), Err(ErrorCode::InvalidAcl));
        let auth_acl = [Acl {
            perms: perms::ALL,
            id: id("auth", ""),
        }];
        assert_eq!(
            fixup(&auth_acl, &auth, Schemes::default()),
            Err(ErrorCode::InvalidAcl)
        );
        let with_digest = vec![id("ip", "127.0.0.1"), id("digest", "u:h")];
        assert_eq!(
            fixup(&auth_acl, &with_digest, Schemes::default()).unwrap(),
            vec![Acl {
                perms: perms::ALL,
                id: id("digest", "u:h")
            }]
        );
        assert_eq!(
            fixup(
                &[Acl {
                    perms: 1,
                    id: id("world", "x")
                }],
                &auth,
                Schemes::default()
            ),
            Err(ErrorCode::InvalidAcl)
        );
        assert_eq!(
            fixup(
                &[Acl {
                    perms: 1,
                    id: id("foo", "x")
                }],
                &auth,
                Schemes::default()
            ),
            Err(ErrorCode::InvalidAcl)
        );
    }

    #[test]
    fn check_rules() {
        let acl = vec![
            Acl {
                perms: perms::READ,
                id: id("digest", "u:h"),
            },
            Acl {
                perms: perms::ALL,
                id: id("ip", "10.0.0.0/8"),
            },
        ];
        assert_eq!(check(&acl, perms::READ, &[id("digest", "u:h")]), Ok(()));
        assert_eq!(
            check(&acl, perms::WRITE, &[id("digest", "u:h")]),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(check(&acl, perms::WRITE, &[id("ip", "10.1.2.3")]), Ok(()));
        assert_eq!(check(&acl, perms::WRITE, &[id("super", "")]), Ok(()));
    }

    /// An ACL granting everything to `scheme:name`.
    fn all_to(scheme: &str, name: &str) -> Acl {
        Acl {
            perms: perms::ALL,
            id: id(scheme, name),
        }
    }

    /// `acl` is refused while its scheme is off, and accepted with the schemes `on`.
    fn needs_scheme(acl: Acl, auth: &AuthIds, on: Schemes) {
        assert_eq!(
            fixup(std::slice::from_ref(&acl), auth, Schemes::default()),
            Err(ErrorCode::InvalidAcl),
            "{acl:?} without its scheme"
        );
        assert!(fixup(&[acl], auth, on).is_ok());
    }

    /// The `auth` ACL of a connection with `auth` expands to `expected` alone (its id of the scheme), which lets
    /// the connection read and not `other`.
    fn creator_acl_is(auth: &AuthIds, schemes: Schemes, expected: Acl, other: Id) -> Vec<Acl> {
        let creator = fixup(
            &[Acl {
                perms: perms::ALL,
                id: id("auth", ""),
            }],
            auth,
            schemes,
        )
        .unwrap();
        assert_eq!(creator, vec![expected]);
        assert_eq!(check(&creator, perms::READ, auth), Ok(()));
        assert_eq!(check(&creator, perms::READ, &[other]), Err(ErrorCode::NoAuth));
        creator
    }

    #[test]
    fn x509_ids() {
        let x509 = |name: &str| all_to("x509", name);
        let auth = vec![id("ip", "127.0.0.1"), id("x509", "CN=app,O=example")];
        // No x509 scheme without a secure client port.
        needs_scheme(x509("CN=app,O=example"), &auth, X509);
        assert_eq!(
            fixup(&[x509("no equals sign")], &auth, X509),
            Err(ErrorCode::InvalidAcl)
        );
        creator_acl_is(&auth, X509, x509("CN=app,O=example"), id("x509", "CN=other"));
        assert!(valid_x500_name("CN=a\\,b,O=\"x, y\"+OU=z,2.5.4.3=c"));
        assert!(valid_x500_name(""));
        assert!(!valid_x500_name("CN=a,"));
    }

    #[test]
    fn sasl_ids() {
        let sasl = |name: &str| all_to("sasl", name);
        let on = Schemes {
            x509: false,
            sasl: true,
        };
        let auth = vec![id("ip", "127.0.0.1"), id("sasl", "bob")];
        // No sasl scheme without SASL.
        needs_scheme(sasl("bob"), &auth, on);
        assert!(fixup(&[sasl("zookeeper/host@REALM")], &auth, on).is_ok());
        assert_eq!(fixup(&[sasl("a@b@c")], &auth, on), Err(ErrorCode::InvalidAcl));
        assert_eq!(fixup(&[sasl("a/b/c@R")], &auth, on), Err(ErrorCode::InvalidAcl));
        let creator = creator_acl_is(&auth, on, sasl("bob"), id("sasl", "alice"));
        assert_eq!(
            check(&creator, perms::READ, &[id("digest", "bob")]),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(check(&creator, perms::READ, &[id("sasl", "super")]), Ok(()));
    }

    #[test]
    fn ids_are_listed_in_zookeepers_set_order() {
        // Java: "digest" ids of alice and bob (passwords pw-alice, pw-bob) fall in bins 15 and 11, the
        // connection's ip id in bin 12 (computed with String/Id.hashCode and ConcurrentHashMap.spread).
        let alice = id("digest", &digest_id("alice:pw-alice"));
        let bob = id("digest", &digest_id("bob:pw-bob"));
        let ip = id("ip", "127.0.0.1");
        assert_eq!(java_bin(java_id_hash(&alice), 16), 15);
        assert_eq!(java_bin(java_id_hash(&bob), 16), 11);
        assert_eq!(java_bin(java_id_hash(&ip), 16), 12);
        let auth = vec![ip.clone(), alice.clone(), bob.clone()];
        assert_eq!(in_zookeeper_order(&auth), vec![&bob, &ip, &alice]);
        let creator = fixup(
            &[Acl {
                perms: 31,
                id: id("auth", ""),
            }],
            &auth,
            Schemes::default(),
        )
        .unwrap();
        let ids: Vec<&Id> = creator.iter().map(|a| &a.id).collect();
        assert_eq!(
            ids,
            vec![&bob, &alice],
            "creator ACL entries in ZooKeeper's order"
        );
        assert_eq!(java_string_hash("ab"), 97 * 31 + 98);
    }
}
