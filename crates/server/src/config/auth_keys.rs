//! The authentication keys of a `zoo.cfg`: the digest super user, and SASL (the JAAS file, its section, the super
//! user, the providers, required and enforced schemes), read line by line and applied once the file is read.

use std::path::Path;

use super::reading::{set, Keys, Line, Reading, SaslKeys};
use super::{ConfigError, IgnoredKey, SaslConfig, ServerConfig};

/// The authentication keys.
pub(super) const KEYS: Keys = &[
    // ZooKeeper turns every zoo.cfg key it does not know into the system property `zookeeper.<key>`, so this line
    // sets `zookeeper.DigestAuthenticationProvider.superDigest` there too.
    ("DigestAuthenticationProvider.superDigest", |r, l| {
        if !looks_like_digest(l.value) {
            r.cfg.ignored.push(l.ignored(
                "not of the form user:base64(sha1(user:password)) (28 characters after the colon), so no password \
                 can match it"
                    .into(),
            ));
        }
        r.cfg.super_digest = l.non_empty();
        Ok(())
    }),
    ("zookeeper.DigestAuthenticationProvider.superDigest", |r, l| {
        r.cfg.ignored.push(l.ignored(
            "unknown key: in zoo.cfg the super digest is DigestAuthenticationProvider.superDigest (ZooKeeper adds \
             the `zookeeper.` prefix itself)"
                .into(),
        ));
        Ok(())
    }),
    // A JVM property for ZooKeeper (`-Djava.security.auth.login.config=FILE`); a zoo.cfg key here.
    ("java.security.auth.login.config", |r, l| {
        set(&mut r.sasl.jaas, Some((l.number, l.path_value())))
    }),
    // ZooKeeper reads these as the system properties `zookeeper.<key>`, which zoo.cfg sets.
    ("sasl.serverconfig", |r, l| {
        set(&mut r.sasl.section, Some(l.value.to_string()))
    }),
    ("superUser", |r, l| {
        set(&mut r.sasl.super_user, Some((l.number, l.value.to_string())))
    }),
    ("sessionRequireClientSASLAuth", |r, l| {
        set(&mut r.sasl.require, l.is_true())
    }),
    ("enforce.auth.enabled", |r, l| {
        set(&mut r.sasl.enforce, l.is_true())
    }),
    ("enforce.auth.schemes", |r, l| {
        set(&mut r.sasl.schemes, l.list().map(str::to_string).collect())
    }),
];

/// An `authProvider.N` line naming the SASL provider (the other providers are in [`super::ignored`]).
pub(super) fn names_the_sasl_provider(line: &Line<'_>) -> bool {
    line.key.starts_with("authProvider.") && line.value == SASL_PROVIDER
}

pub(super) fn sasl_provider(r: &mut Reading, line: &Line<'_>) {
    r.sasl.provider = Some((line.number, line.key.to_string()));
}

/// `user:` then 28 base64 characters (a SHA-1).
fn looks_like_digest(value: &str) -> bool {
    use base64::Engine as _;
    value.split_once(':').is_some_and(|(user, hash)| {
        !user.is_empty()
            && base64::engine::general_purpose::STANDARD
                .decode(hash)
                .is_ok_and(|h| h.len() == 20)
    })
}

/// ZooKeeper's SASL authentication provider class (`authProvider.N=` in zoo.cfg).
pub(super) const SASL_PROVIDER: &str = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider";

impl SaslKeys {
    /// Reads the JAAS file and sets `cfg.sasl` and `cfg.enforce_auth_schemes`.
    pub(super) fn apply(self, cfg: &mut ServerConfig, path: &Path) -> Result<(), ConfigError> {
        let mut ignore = |line: usize, key: &str, reason: &str| {
            cfg.ignored.push(IgnoredKey {
                path: path.to_path_buf(),
                line,
                key: key.to_string(),
                reason: reason.to_string(),
            })
        };
        match self.jaas {
            Some((_, file)) => {
                let section = self.section.as_deref().unwrap_or(crate::sasl::DEFAULT_SECTION);
                let mut sasl = SaslConfig::from_jaas_file(&file, section)?;
                sasl.super_user = self.super_user.map(|(_, user)| user);
                cfg.sasl = Some(sasl);
            }
            None => {
                let no_sasl = "no java.security.auth.login.config (the JAAS file), so no SASL";
                if let Some((line, key)) = &self.provider {
                    ignore(*line, key, no_sasl);
                }
                if let Some((line, _)) = self.super_user {
                    ignore(line, "superUser", no_sasl);
                }
            }
        }
        // ZooKeeper 3.8's AuthenticationHelper: sessionRequireClientSASLAuth=true wins and means `sasl`.
        if self.require {
            cfg.enforce_auth_schemes = vec!["sasl".into()];
        } else if self.enforce {
            if self.schemes.is_empty() {
                return Err(ConfigError::EnforceWithoutSchemes {
                    path: path.to_path_buf(),
                });
            }
            cfg.enforce_auth_schemes = self.schemes;
        }
        Ok(())
    }
}
