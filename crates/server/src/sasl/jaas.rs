//! The JAAS login configuration file ZooKeeper's server reads (named by the JVM property
//! `java.security.auth.login.config`): sections of login modules with options, e.g.
//!
//! ```text
//! Server {
//!     org.apache.zookeeper.server.auth.DigestLoginModule required
//!     user_bob="secret"
//!     user_alice="other";
//! };
//! ```
//!
//! The syntax is Java's `ConfigFile`: `Name { Module Flag key=value ...; ... };`, values quoted (`"..."`, with
//! `\` escapes) or bare words, `//` and `/* */` comments. ZooKeeper's `SaslServerCallbackHandler` takes every
//! `user_NAME="PASSWORD"` option of every module of the section as a DIGEST-MD5 user.

/// One login module entry of a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The module's class, e.g. `org.apache.zookeeper.server.auth.DigestLoginModule`.
    pub module: String,
    /// `required`, `requisite`, `sufficient` or `optional`.
    pub flag: String,
    /// The options, in file order.
    pub options: Vec<(String, String)>,
}

/// The most bytes of a JAAS file read (a login configuration is a few hundred bytes).
pub const MAX_FILE_LEN: usize = 1 << 20;

/// Token of the JAAS syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Punct(char),
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                let mut closed = false;
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        closed = true;
                        break;
                    }
                    last = c;
                }
                if !closed {
                    return Err("unterminated /* comment".into());
                }
            }
            '"' => {
                let mut value = String::new();
                let mut closed = false;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some('n') => value.push('\n'),
                            Some('t') => value.push('\t'),
                            Some('r') => value.push('\r'),
                            Some(other) => value.push(other),
                            None => break,
                        },
                        other => value.push(other),
                    }
                }
                if !closed {
                    return Err("unterminated quoted value".into());
                }
                out.push(Token::Quoted(value));
            }
            '{' | '}' | ';' | '=' => out.push(Token::Punct(c)),
            _ => {
                let mut word = String::from(c);
                while let Some(&next) = chars.peek() {
                    if next.is_whitespace() || matches!(next, '{' | '}' | ';' | '=' | '"') {
                        break;
                    }
                    word.push(next);
                    chars.next();
                }
                out.push(Token::Word(word));
            }
        }
    }
    Ok(out)
}

/// Parses a JAAS file into its sections (name, entries), in file order.
pub fn parse(text: &str) -> Result<Vec<(String, Vec<Entry>)>, String> {
    let tokens = tokens(text)?;
    let mut it = tokens.into_iter().peekable();
    let mut sections = Vec::new();
    let word = |t: Option<Token>, what: &str| match t {
        Some(Token::Word(w)) => Ok(w),
        other => Err(format!("expected {what}, found {}", describe(other.as_ref()))),
    };
    let punct = |t: Option<Token>, p: char| match t {
        Some(Token::Punct(c)) if c == p => Ok(()),
        other => Err(format!("expected `{p}`, found {}", describe(other.as_ref()))),
    };
    while it.peek().is_some() {
        let name = word(it.next(), "a section name")?;
        punct(it.next(), '{')?;
        let mut entries = Vec::new();
        loop {
            if it.peek() == Some(&Token::Punct('}')) {
                it.next();
                break;
            }
            let module = word(it.next(), "a login module class or `}`")?;
            let flag = word(
                it.next(),
                "a control flag (required, requisite, sufficient, optional)",
            )?;
            if !matches!(
                flag.to_ascii_lowercase().as_str(),
                "required" | "requisite" | "sufficient" | "optional"
            ) {
                return Err(format!("bad control flag {flag:?} for {module}"));
            }
            let mut options = Vec::new();
            loop {
                match it.next() {
                    Some(Token::Punct(';')) => break,
                    Some(Token::Word(key)) => {
                        punct(it.next(), '=')?;
                        let value = match it.next() {
                            Some(Token::Quoted(v) | Token::Word(v)) => v,
                            other => {
                                return Err(format!(
                                    "expected the value of {key}, found {}",
                                    describe(other.as_ref())
                                ))
                            }
                        };
                        options.push((key, value));
                    }
                    other => {
                        return Err(format!(
                            "expected an option or `;` in {module}, found {}",
                            describe(other.as_ref())
                        ))
                    }
                }
            }
            entries.push(Entry {
                module,
                flag,
                options,
            });
        }
        punct(it.next(), ';')?;
        sections.push((name, entries));
    }
    Ok(sections)
}

fn describe(token: Option<&Token>) -> String {
    match token {
        None => "the end of the file".into(),
        Some(Token::Word(w)) => format!("{w:?}"),
        Some(Token::Quoted(q)) => format!("a quoted value ({} characters)", q.chars().count()),
        Some(Token::Punct(c)) => format!("`{c}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_zookeepers_server_section() {
        let text = r#"
            // the server's section
            Server {
                org.apache.zookeeper.server.auth.DigestLoginModule required
                user_super="adminsecret" /* a comment */
                user_bob="se\"cret";
            };
            Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password=x; };
        "#;
        let sections = parse(text).unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].0, "Server");
        assert_eq!(
            sections[0].1,
            vec![Entry {
                module: "org.apache.zookeeper.server.auth.DigestLoginModule".into(),
                flag: "required".into(),
                options: vec![
                    ("user_super".into(), "adminsecret".into()),
                    ("user_bob".into(), "se\"cret".into())
                ],
            }]
        );
        assert_eq!(sections[1].1[0].options[1], ("password".into(), "x".into()));
    }

    proptest::proptest! {
        /// Any text made of the syntax's characters parses or is refused, never panics.
        #[test]
        fn any_text_is_parsed_or_refused(text in "[A-Za-z_{};=\"/*\\ \n]{0,120}") {
            let _ = parse(&text);
        }
    }

    #[test]
    fn refuses_what_java_refuses() {
        for bad in [
            "Server { M required user_a=\"x\" };",
            "Server { M required user_a=\"x\"; }",
            "Server { M mandatory; };",
            "Server { M required user_a=; };",
            "Server { M required user_a=\"x; };",
            "Server /* { M required; };",
            "{ M required; };",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
