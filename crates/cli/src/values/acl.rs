//! `--acl` and `--parent-acl`: ZooKeeper ACL entries, in order.

use base64::Engine as _;
use zookeeper_client::{Acl, AuthId, Permission};

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

#[cfg(test)]
mod tests {
    use super::*;

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
