//! SASL for clients, as ZooKeeper 3.8 runs it with a JAAS `Server` section of DIGEST-MD5 users: the users
//! ([`SaslConfig`], read from the JAAS file), the mechanism (`digest_md5.rs`) and the file's syntax
//! (`jaas.rs`). The request handler is `ops/sasl.rs`; the `sasl` ACL scheme is in `acl.rs`.
//!
//! GSSAPI (Kerberos) is not implemented: a `Server` section with only a `Krb5LoginModule` is refused at start.

pub mod digest_md5;
pub mod jaas;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The JAAS section ZooKeeper's server reads by default (`zookeeper.sasl.serverconfig`).
pub const DEFAULT_SECTION: &str = "Server";

/// SASL DIGEST-MD5 users, from the `user_NAME="PASSWORD"` options of a JAAS file's server section.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslConfig {
    /// User name → password.
    pub users: BTreeMap<String, String>,
    /// A SASL user who bypasses every ACL once authenticated (ZooKeeper's system property
    /// `zookeeper.superUser`; zoo.cfg `superUser`).
    pub super_user: Option<String>,
}

impl std::fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslConfig")
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("super_user", &self.super_user)
            .finish()
    }
}

/// Why a JAAS file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JaasError {
    /// The file could not be read.
    #[error("cannot read the JAAS file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not parse, lacks the section, or the section has no DIGEST-MD5 user.
    #[error("JAAS file {path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl SaslConfig {
    /// The users of `section` (normally [`DEFAULT_SECTION`]) of the JAAS file at `path`.
    ///
    /// # Errors
    /// The file cannot be read or is over 1 MiB, does not parse, has no such section, or the section has no
    /// `user_` option (a Kerberos-only section: GSSAPI is not implemented), or a user name has `/` or `@`
    /// (ZooKeeper rewrites such names by Kerberos rules, which the embedded server does not).
    pub fn from_jaas_file(path: &Path, section: &str) -> Result<SaslConfig, JaasError> {
        let invalid = |reason: String| JaasError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|source| JaasError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if bytes.len() > jaas::MAX_FILE_LEN {
            return Err(invalid(format!(
                "{} bytes, over the {}-byte limit",
                bytes.len(),
                jaas::MAX_FILE_LEN
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| invalid("not UTF-8".into()))?;
        Self::from_jaas_text(&text, section).map_err(invalid)
    }

    fn from_jaas_text(text: &str, section: &str) -> Result<SaslConfig, String> {
        let sections = jaas::parse(text)?;
        let Some((_, entries)) = sections.iter().find(|(name, _)| name == section) else {
            return Err(format!("no `{section}` section"));
        };
        let mut users = BTreeMap::new();
        for entry in entries {
            if !entry.module.ends_with(".DigestLoginModule") {
                tracing::warn!(
                    module = entry.module,
                    "JAAS login module ignored: the embedded server speaks SASL DIGEST-MD5 only (no GSSAPI)"
                );
            }
            for (key, value) in &entry.options {
                if let Some(user) = key.strip_prefix("user_") {
                    if user.contains(['/', '@']) {
                        return Err(format!(
                            "user name {user:?} has `/` or `@`: a Kerberos-style name, which the embedded server does not map"
                        ));
                    }
                    users.insert(user.to_string(), value.clone());
                }
            }
        }
        if users.is_empty() {
            return Err(format!(
                "the `{section}` section has no user_NAME=\"PASSWORD\" option (DigestLoginModule); \
                 the embedded server speaks SASL DIGEST-MD5 only, not GSSAPI"
            ));
        }
        Ok(SaslConfig {
            users,
            super_user: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_users_of_the_named_section() {
        let text = r#"
            Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="b" user_alice="a"; };
            Other { org.apache.zookeeper.server.auth.DigestLoginModule required user_eve="e"; };
        "#;
        let cfg = SaslConfig::from_jaas_text(text, DEFAULT_SECTION).unwrap();
        assert_eq!(
            cfg.users
                .iter()
                .map(|(u, p)| (u.as_str(), p.as_str()))
                .collect::<Vec<_>>(),
            vec![("alice", "a"), ("bob", "b")]
        );
        assert!(
            !format!("{cfg:?}").contains("\"b\""),
            "passwords stay out of Debug"
        );
        assert_eq!(SaslConfig::from_jaas_text(text, "Other").unwrap().users.len(), 1);
        assert!(SaslConfig::from_jaas_text(text, "Missing").is_err());
        let kerberos = r#"Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" principal="zookeeper/h@R"; };"#;
        assert!(SaslConfig::from_jaas_text(kerberos, DEFAULT_SECTION)
            .unwrap_err()
            .contains("not GSSAPI"));
        let kerberos_name = r#"Server { a.DigestLoginModule required user_bob@R="x"; };"#;
        assert!(SaslConfig::from_jaas_text(kerberos_name, DEFAULT_SECTION).is_err());
    }
}
