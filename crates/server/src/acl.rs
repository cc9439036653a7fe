//! ACL checks and the `digest` / `ip` / `world` / `auth` schemes, following ZooKeeper's
//! `PrepRequestProcessor.fixupACL` and `ZooKeeperServer.checkACL`.

use base64::Engine as _;
use std::net::IpAddr;
use zklock_codec::{Acl, ErrorCode, Id};

/// The identities a connection has proved: always `ip:<peer>`, plus one `digest` id per `auth` request, plus
/// `super` when a digest matched the configured super digest.
pub type AuthIds = Vec<Id>;

/// The ids in the order ZooKeeper lists them (creator ACLs, whoAmI). ZooKeeper keeps a connection's ids in a
/// `ConcurrentHashMap`-backed set, so it iterates them by hash bin — `spread(Id.hashCode()) & (table − 1)`,
/// with the default table of 16 bins doubled whenever the set reaches 3/4 of it — and in insertion order
/// within a bin; `auth` (insertion order here) maps onto that. (After a resize Java may reorder a bin; with
/// fewer than 12 ids per connection, which is every real case, the order is exact.)
pub fn in_zookeeper_order(auth: &AuthIds) -> Vec<&Id> {
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

/// Validates a client ACL and expands the `auth` scheme to the connection's authenticated ids, removing
/// duplicates. Empty ACLs, unknown schemes, malformed ids and `auth` without any identity are `InvalidAcl`.
pub fn fixup(acl: &[Acl], auth: &AuthIds) -> Result<Vec<Acl>, ErrorCode> {
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
                // Only schemes whose ids are real credentials count ("ip" is authenticated too in ZooKeeper,
                // but it is implicit for every connection, so ZooKeeper's providers skip it here as well).
                let mut any = false;
                for id in in_zookeeper_order(auth)
                    .into_iter()
                    .filter(|id| id.scheme == "digest")
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
            "digest" if a.id.id.split(':').count() == 2 => push(a.clone()),
            "ip" if parse_ip_pattern(&a.id.id).is_some() => push(a.clone()),
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
        assert_eq!(fixup(&[], &auth), Err(ErrorCode::InvalidAcl));
        let auth_acl = [Acl {
            perms: perms::ALL,
            id: id("auth", ""),
        }];
        assert_eq!(fixup(&auth_acl, &auth), Err(ErrorCode::InvalidAcl));
        let with_digest = vec![id("ip", "127.0.0.1"), id("digest", "u:h")];
        assert_eq!(
            fixup(&auth_acl, &with_digest).unwrap(),
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
                &auth
            ),
            Err(ErrorCode::InvalidAcl)
        );
        assert_eq!(
            fixup(
                &[Acl {
                    perms: 1,
                    id: id("foo", "x")
                }],
                &auth
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
        assert_eq!(check(&acl, perms::READ, &vec![id("digest", "u:h")]), Ok(()));
        assert_eq!(
            check(&acl, perms::WRITE, &vec![id("digest", "u:h")]),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(check(&acl, perms::WRITE, &vec![id("ip", "10.1.2.3")]), Ok(()));
        assert_eq!(check(&acl, perms::WRITE, &vec![id("super", "")]), Ok(()));
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
