//! `SCHEME:CREDENTIALS`: `--auth`, and each line of `ZKLOCK_AUTH` and `--auth-file` (read in
//! `zk/security.rs`).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
