//! `--sasl MECHANISM[:USER]`: the mechanism and who we are, never the password.

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

/// `--sasl MECHANISM[:USER]`: how to authenticate with SASL, but for the password or the ticket (read in
/// `zk/sasl.rs` and `zk/kerberos.rs`).
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
}
