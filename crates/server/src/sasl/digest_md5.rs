//! The server side of SASL DIGEST-MD5 (RFC 2831) as ZooKeeper's server runs it through Java's
//! `DigestMD5Server`: protocol `zookeeper`, server name and realm `zk-sasl-md5`, quality of protection `auth`
//! only (no integrity or confidentiality layer, which ZooKeeper never negotiates), algorithm `md5-sess`.
//!
//! Two steps: the client's first token (empty; ignored) gets the challenge (realm, nonce, charset, algorithm); its
//! digest response is checked against the user's password and answered with `rspauth`, which proves to the
//! client that the server knows the password too. The authenticated id is the user name (ZooKeeper's callback
//! handler authorizes the authentication id whatever `authzid` the client asks for).

use base64::Engine as _;
use rand::RngCore as _;

/// The realm and server name ZooKeeper gives Java's DIGEST-MD5 server.
pub const REALM: &str = "zk-sasl-md5";
/// The `digest-uri` a client must name: protocol `zookeeper`, server name [`REALM`].
const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";
/// Java's `DigestMD5Server.MAX_RESPONSE_LENGTH`: a longer client token is refused.
pub const MAX_RESPONSE_LEN: usize = 4096;

/// Where a DIGEST-MD5 exchange is.
#[derive(Debug)]
pub enum DigestMd5 {
    /// Nothing received yet.
    Start,
    /// The challenge with this nonce was sent.
    Challenged {
        /// The nonce of the challenge.
        nonce: String,
    },
    /// Authenticated, or failed: any further token is refused.
    Over,
}

/// What one step produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// The challenge: the exchange goes on.
    Challenge(Vec<u8>),
    /// Authenticated as `user`; `token` (the `rspauth`) goes back to the client.
    Authenticated {
        /// The user name, the id of `sasl:<user>`.
        user: String,
        /// The server's last token.
        token: Vec<u8>,
    },
}

impl DigestMd5 {
    /// Takes the client's next token. `password` looks a user's password up. An error (for the log) ends the
    /// exchange: the connection is refused.
    pub fn step(&mut self, token: &[u8], password: impl Fn(&str) -> Option<String>) -> Result<Step, String> {
        match std::mem::replace(self, DigestMd5::Over) {
            // Java's server ignores an initial token (RFC 2831 has none), and so does this one.
            DigestMd5::Start => {
                let nonce = new_nonce();
                // Java's challenge, directive for directive (its qop, `auth`, is the default and not written).
                let challenge =
                    format!("realm=\"{REALM}\",nonce=\"{nonce}\",charset=utf-8,algorithm=md5-sess");
                *self = DigestMd5::Challenged { nonce };
                Ok(Step::Challenge(challenge.into_bytes()))
            }
            DigestMd5::Challenged { nonce } => {
                if token.len() > MAX_RESPONSE_LEN {
                    return Err(format!(
                        "DIGEST-MD5 response of {} bytes, over the {MAX_RESPONSE_LEN}-byte limit",
                        token.len()
                    ));
                }
                verify(token, &nonce, password)
            }
            DigestMd5::Over => Err("DIGEST-MD5 authentication is over".into()),
        }
    }
}

/// 30 random bytes in base64 (40 characters), as Java's `DigestMD5Base.generateNonce`.
fn new_nonce() -> String {
    let mut bytes = [0u8; 30];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The directives of a digest response.
#[derive(Default)]
struct Response {
    username: Option<String>,
    realm: Option<String>,
    nonce: Option<String>,
    cnonce: Option<String>,
    nc: Option<String>,
    qop: Option<String>,
    digest_uri: Option<String>,
    response: Option<String>,
    charset: Option<String>,
    authzid: Option<String>,
}

fn verify(token: &[u8], nonce: &str, password: impl Fn(&str) -> Option<String>) -> Result<Step, String> {
    let text = std::str::from_utf8(token).map_err(|_| "DIGEST-MD5 response is not UTF-8")?;
    let r = parse_response(text)?;
    let need = |v: Option<String>, name: &str| v.ok_or_else(|| format!("DIGEST-MD5 response without {name}"));
    let utf8 = match r.charset.as_deref() {
        None => false,
        Some(c) if c.eq_ignore_ascii_case("utf-8") => true,
        Some(c) => return Err(format!("DIGEST-MD5 charset {c:?} is not utf-8")),
    };
    let username = need(r.username, "username")?;
    let realm = r.realm.unwrap_or_default();
    if realm != REALM {
        return Err(format!("DIGEST-MD5 realm {realm:?} was not offered"));
    }
    if need(r.nonce, "nonce")? != nonce {
        return Err("DIGEST-MD5 nonce mismatch".into());
    }
    let cnonce = need(r.cnonce, "cnonce")?;
    let nc = need(r.nc, "nc")?;
    if u32::from_str_radix(&nc, 16) != Ok(1) {
        return Err(format!("DIGEST-MD5 nonce count {nc:?} is not 1"));
    }
    let qop = r.qop.unwrap_or_else(|| "auth".into());
    if qop != "auth" {
        return Err(format!("DIGEST-MD5 qop {qop:?} was not offered"));
    }
    let uri = need(r.digest_uri, "digest-uri")?;
    if !uri.eq_ignore_ascii_case(DIGEST_URI) {
        return Err(format!("DIGEST-MD5 digest-uri {uri:?} is not {DIGEST_URI}"));
    }
    let response = need(r.response, "response")?;
    let Some(password) = password(&username) else {
        return Err(format!("DIGEST-MD5 user {username:?} is not in the JAAS section"));
    };
    let a1 = a1(
        &username,
        &realm,
        &password,
        nonce,
        &cnonce,
        r.authzid.as_deref(),
        utf8,
    )
    .ok_or("DIGEST-MD5 user, realm or password not representable in ISO-8859-1")?;
    let expected = kd(&a1, nonce, &nc, &cnonce, &qop, &format!("AUTHENTICATE:{uri}"));
    if !equal_ignoring_case(expected.as_bytes(), response.as_bytes()) {
        return Err(format!("DIGEST-MD5 wrong password for user {username:?}"));
    }
    let rspauth = kd(&a1, nonce, &nc, &cnonce, &qop, &format!(":{uri}"));
    Ok(Step::Authenticated {
        user: username,
        token: format!("rspauth={rspauth}").into_bytes(),
    })
}

/// `HEX(H(A1))` for md5-sess: `H(user:realm:password) ":" nonce ":" cnonce [":" authzid]`. User and realm
/// are UTF-8 with `charset=utf-8` (ISO-8859-1 without); the password is ISO-8859-1 when it can be, as RFC 2831
/// and Java's `DigestMD5Base` have it. `None`: not representable without `charset=utf-8`.
fn a1(
    user: &str,
    realm: &str,
    password: &str,
    nonce: &str,
    cnonce: &str,
    authzid: Option<&str>,
    utf8: bool,
) -> Option<String> {
    let mut inner = md5::Context::new();
    inner.consume(encode(user, utf8, false)?);
    inner.consume(b":");
    inner.consume(encode(realm, utf8, false)?);
    inner.consume(b":");
    inner.consume(encode(password, utf8, true)?);
    let mut outer = md5::Context::new();
    outer.consume(inner.compute().0);
    outer.consume(b":");
    outer.consume(nonce.as_bytes());
    outer.consume(b":");
    outer.consume(cnonce.as_bytes());
    if let Some(authzid) = authzid {
        outer.consume(b":");
        outer.consume(encode(authzid, utf8, false)?);
    }
    Some(hex(&outer.compute().0))
}

/// `HEX(KD(HEX(H(A1)), nonce ":" nc ":" cnonce ":" qop ":" HEX(H(A2))))`.
fn kd(a1: &str, nonce: &str, nc: &str, cnonce: &str, qop: &str, a2: &str) -> String {
    let a2 = hex(&md5::compute(a2.as_bytes()).0);
    hex(&md5::compute(format!("{a1}:{nonce}:{nc}:{cnonce}:{qop}:{a2}")).0)
}

/// A string's bytes for hashing: ISO-8859-1 when it fits and either no `charset=utf-8` or `latin1_first`, else
/// UTF-8 (with `charset=utf-8` only).
fn encode(s: &str, utf8: bool, latin1_first: bool) -> Option<Vec<u8>> {
    let latin1 = || s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
    if !utf8 || latin1_first {
        if let Some(bytes) = latin1() {
            return Some(bytes);
        }
    }
    utf8.then(|| s.as_bytes().to_vec())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without stopping at the first difference.
fn equal_ignoring_case(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).fold(0u8, |acc, (x, y)| {
            acc | (x.to_ascii_lowercase() ^ y.to_ascii_lowercase())
        }) == 0
}

/// Parses `key=value` directives separated by commas (values quoted with `\` escapes, or bare tokens);
/// unknown directives are ignored, a repeated one is an error.
fn parse_response(text: &str) -> Result<Response, String> {
    let mut r = Response::default();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| "DIGEST-MD5 response: a directive without `=`".to_string())?;
        let key = rest[..eq].trim().to_ascii_lowercase();
        rest = rest[eq + 1..].trim_start();
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            v.push(escaped);
                        }
                    }
                    c => v.push(c),
                }
            }
            let end = end.ok_or("DIGEST-MD5 response: an unterminated quoted value")?;
            value = v;
            rest = quoted[end..].trim_start();
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_string();
            rest = &rest[end..];
        }
        match rest.strip_prefix(',') {
            Some(after) => rest = after.trim_start(),
            None if rest.is_empty() => {}
            None => return Err("DIGEST-MD5 response: directives not separated by `,`".into()),
        }
        let slot = match key.as_str() {
            "username" => &mut r.username,
            "realm" => &mut r.realm,
            "nonce" => &mut r.nonce,
            "cnonce" => &mut r.cnonce,
            "nc" => &mut r.nc,
            "qop" => &mut r.qop,
            "digest-uri" => &mut r.digest_uri,
            "response" => &mut r.response,
            "charset" => &mut r.charset,
            "authzid" => &mut r.authzid,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return Err(format!("DIGEST-MD5 response: {key} given twice"));
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2831's example (section 4, IMAP: realm elwood.innosoft.com, user chris, password secret).
    #[test]
    fn computes_rfc_2831s_example() {
        let nonce = "OA6MG9tEQGm2hh";
        let cnonce = "OA6MHXh6VqTrRk";
        let a1 = a1(
            "chris",
            "elwood.innosoft.com",
            "secret",
            nonce,
            cnonce,
            None,
            true,
        )
        .unwrap();
        let uri = "imap/elwood.innosoft.com";
        assert_eq!(
            kd(
                &a1,
                nonce,
                "00000001",
                cnonce,
                "auth",
                &format!("AUTHENTICATE:{uri}")
            ),
            "d388dad90d4bbd760a152321f2143af7"
        );
        assert_eq!(
            kd(&a1, nonce, "00000001", cnonce, "auth", &format!(":{uri}")),
            "ea40f60335c427b5527b84dbabcdfffd"
        );
    }

    fn client_response(user: &str, password: &str, nonce: &str, extra: &str) -> Vec<u8> {
        let cnonce = "c1c2c3";
        let a1 = a1(user, REALM, password, nonce, cnonce, None, true).unwrap();
        let response = kd(
            &a1,
            nonce,
            "00000001",
            cnonce,
            "auth",
            &format!("AUTHENTICATE:{DIGEST_URI}"),
        );
        format!(
            "charset=utf-8,username=\"{user}\",realm=\"{REALM}\",nonce=\"{nonce}\",nc=00000001,cnonce=\"{cnonce}\",\
             digest-uri=\"{DIGEST_URI}\",maxbuf=65536,response={response},qop=auth{extra}"
        )
        .into_bytes()
    }

    fn challenge_nonce(challenge: &[u8]) -> String {
        let text = std::str::from_utf8(challenge).unwrap();
        let start = text.find("nonce=\"").unwrap() + 7;
        text[start..].split('"').next().unwrap().to_string()
    }

    fn users(name: &str) -> Option<String> {
        (name == "bob").then(|| "secret".to_string())
    }

    #[test]
    fn authenticates_the_right_password_only() {
        let mut server = DigestMd5::Start;
        let Ok(Step::Challenge(challenge)) = server.step(b"", users) else {
            panic!("no challenge");
        };
        let nonce = challenge_nonce(&challenge);
        assert_eq!(nonce.len(), 40);
        let step = server.step(&client_response("bob", "secret", &nonce, ""), users);
        let Ok(Step::Authenticated { user, token }) = step else {
            panic!("{step:?}");
        };
        assert_eq!(user, "bob");
        assert!(token.starts_with(b"rspauth="));
        assert!(server.step(b"", users).is_err(), "over after success");

        // Negative controls: a wrong password, an unknown user, a replayed nonce, another digest-uri.
        for (user, password, nonce_of, extra) in [
            ("bob", "wrong", None, ""),
            ("eve", "secret", None, ""),
            ("bob", "secret", Some("stale"), ""),
            ("bob", "secret", None, ",qop=auth"),
        ] {
            let mut server = DigestMd5::Start;
            let Ok(Step::Challenge(challenge)) = server.step(b"", users) else {
                panic!("no challenge");
            };
            let nonce = nonce_of.map_or_else(|| challenge_nonce(&challenge), str::to_string);
            let result = server.step(&client_response(user, password, &nonce, extra), users);
            assert!(result.is_err(), "{user}/{password}/{nonce}{extra}: {result:?}");
        }
    }

    proptest::proptest! {
        /// Any bytes as the response (and as a second one after it): an error or a step, never a panic.
        #[test]
        fn any_response_is_answered(token: Vec<u8>, again: Vec<u8>) {
            let mut server = DigestMd5::Start;
            server.step(b"", users).unwrap();
            let _ = server.step(&token, users);
            let _ = server.step(&again, users);
        }

        /// Responses made of the directive syntax's own characters, where a parser would trip.
        #[test]
        fn directive_like_responses_are_answered(token in "[a-z=\",\\ -]{0,80}") {
            let mut server = DigestMd5::Start;
            server.step(b"", users).unwrap();
            let _ = server.step(token.as_bytes(), users);
        }
    }

    #[test]
    fn refuses_malformed_tokens() {
        let mut server = DigestMd5::Start;
        assert!(
            matches!(server.step(b"ignored", users), Ok(Step::Challenge(_))),
            "an initial token is ignored, as Java's server does"
        );
        for bad in [
            &b"\xff\xfe"[..],
            b"username",
            b"username=\"bob",
            b"username=\"bob\" realm=x",
            &[b'a'; MAX_RESPONSE_LEN + 1],
        ] {
            let mut server = DigestMd5::Start;
            server.step(b"", users).unwrap();
            assert!(server.step(bad, users).is_err());
        }
    }
}
