//! Masking what looks like a credential in the command line that `zklock run` and `zklock elect` store in their
//! node (`supervise::describe`), which anybody who may read the node sees. Word by word — an argument is split at
//! spaces, so a `sh -c '…'` script is masked too — a secret becomes `***`:
//!
//! - the value of `NAME=VALUE` when NAME looks like a secret's ([`secret_name`]): `--password=x`, `token=x`,
//!   `PGPASSWORD=x`, a URL's `?api_key=x&…`;
//! - the word after a flag whose name looks like a secret's (`--password`, `--pass`, `--passwd`, `--token`,
//!   `--secret`, `--api-key`, `-pass`…) — unless that word starts with `-`: it is then the next flag, not this
//!   one's value, and is itself looked at (`--password --token t2` keeps `--password` and masks `t2`). So a
//!   password that starts with `-` given as the next word is shown; `--password=-x` is not;
//! - the password of a URL's `user:password@`; everything after a header name such as `Authorization:`;
//! - the password flags of the known clients in [`CLIENTS`], below.
//!
//! Short flags are the trap: `-p` and `-P` carry a password for a few clients and mean something harmless to most
//! commands (`mkdir -p`, `ssh -p 22`, `cp -P`, `rsync -P`; even `mysql -P 3306`, its port). So a short flag is
//! taken for a password only after the name of a client whose password flag it is — the word, or its last path
//! part (`/usr/bin/mysql`), in the same argument or an earlier one (`sudo -u db mysql …`, `sh -c 'mysqldump …'`) —
//! until the end of that shell command (a word that is or ends with `|`, `;` or `&`) or another client's name:
//!
//! - the MySQL and MariaDB clients (`mysql`, `mysqldump`, `mariadb`…): `-pSECRET`, attached — their only form: a
//!   bare `-p` prompts for the password, and the word after it (the database) is kept;
//! - `sqlcmd` and `bcp` (SQL Server) `-P`, `sshpass` and the MongoDB tools `-p`, `redis-cli` `-a`: attached or the
//!   next word (with the same rule for a next word that starts with `-`).
//!
//! Erring towards masking: the flag of another command run by such a client keeps being looked at
//! (`sshpass -p pw ssh -p 22 host` masks `22` as well).

/// What replaces a secret in the stored command line.
const MASK: &str = "***";

/// A client whose short flag carries a password.
struct Client {
    /// Its command names.
    names: &'static [&'static str],
    /// The flag.
    flag: &'static str,
    /// Whether the flag's value may also be the next word; otherwise it is attached only.
    value_may_follow: bool,
}

/// The clients whose short flag carries a password (see the module's documentation).
const CLIENTS: [Client; 4] = [
    Client {
        names: &[
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlshow",
            "mysqlslap",
            "mysqlpump",
            "mysqlbinlog",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
            "mariadb-import",
            "mariadb-check",
            "mariadb-show",
            "mariadb-slap",
            "mariadb-binlog",
            "mariadb-backup",
            "mariabackup",
        ],
        flag: "-p",
        value_may_follow: false,
    },
    Client {
        names: &["sqlcmd", "bcp"],
        flag: "-P",
        value_may_follow: true,
    },
    Client {
        names: &[
            "sshpass",
            "mongo",
            "mongosh",
            "mongodump",
            "mongorestore",
            "mongoexport",
            "mongoimport",
            "mongostat",
            "mongotop",
            "mongofiles",
        ],
        flag: "-p",
        value_may_follow: true,
    },
    Client {
        names: &["redis-cli"],
        flag: "-a",
        value_may_follow: true,
    },
];

/// The command line with what looks like a credential replaced by `***` (see the module's documentation).
pub fn redact(command: &[String]) -> Vec<String> {
    let mut scan = Scan::default();
    command
        .iter()
        .map(|arg| {
            // After a header name, the rest of the argument.
            let mut rest_secret = false;
            let words: Vec<String> = arg
                .split(' ')
                .map(|word| {
                    if word.is_empty() {
                        return String::new();
                    }
                    if rest_secret {
                        return MASK.to_owned();
                    }
                    if word.strip_suffix(':').is_some_and(secret_name) {
                        rest_secret = true;
                        return word.to_owned();
                    }
                    scan.word(word)
                })
                .collect();
            words.join(" ")
        })
        .collect()
}

/// What the words seen so far say about the next ones.
#[derive(Default)]
struct Scan {
    /// The next non-empty word (in this argument or the next), unless it is a flag, is a secret flag's value.
    pending: bool,
    /// The client of the shell command we are in, whose password flag is looked for.
    client: Option<&'static Client>,
}

impl Scan {
    /// `word` masked.
    fn word(&mut self, word: &str) -> String {
        let masked = if std::mem::take(&mut self.pending) && !word.starts_with('-') {
            MASK.to_owned()
        } else if let Some(masked) = self.client_flag(word) {
            masked
        } else {
            if word.starts_with('-') && !word.contains('=') && secret_name(word) {
                self.pending = true;
            }
            mask_url_password(&mask_assignments(word))
        };
        if let Some(client) = client_named(word) {
            self.client = Some(client);
        } else if word.ends_with(['|', ';', '&']) {
            self.client = None;
        }
        masked
    }

    /// `word` masked if it is the password flag of the client we are in: `-p***` for `-pSECRET`; a bare flag is
    /// kept, and its value is the next word if the client takes it so.
    fn client_flag(&mut self, word: &str) -> Option<String> {
        let client = self.client?;
        let value = word.strip_prefix(client.flag)?;
        if value.is_empty() {
            self.pending = client.value_may_follow;
            return Some(word.to_owned());
        }
        Some(format!("{}{MASK}", client.flag))
    }
}

/// The client `word` names: the word, or its part after the last `/` (a path), `(`, `` ` `` or quote (in a
/// script).
fn client_named(word: &str) -> Option<&'static Client> {
    let word = word.trim_end_matches(['`', '\'', '"']);
    let name = word.rsplit(['/', '(', '`', '\'', '"']).next().unwrap_or(word);
    CLIENTS.iter().find(|client| client.names.contains(&name))
}

/// Whether a flag's or a variable's name looks like it holds a secret: it contains password, passwd, passphrase,
/// secret, token, apikey, api-key, access-key, private-key or credential, or one of its parts (split at `-`, `_`
/// and `.`) is pass, pwd, pw, auth or authorization (case-insensitive).
fn secret_name(name: &str) -> bool {
    const INSIDE: [&str; 10] = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "api-key",
        "access-key",
        "private-key",
        "credential",
    ];
    let name = name
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('_', "-");
    INSIDE.iter().any(|inside| name.contains(inside))
        || name
            .split(['-', '.'])
            .any(|part| matches!(part, "pass" | "pwd" | "pw" | "auth" | "authorization"))
}

/// `word` with the value of each `NAME=VALUE` whose NAME is a secret's masked; a value ends at `&`, `;`, `,` or the
/// end of the word.
fn mask_assignments(word: &str) -> String {
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let mut out = String::new();
    let mut rest = word;
    while let Some(eq) = rest.find('=') {
        let (before, after) = (&rest[..eq], &rest[eq + 1..]);
        let name = &before[before.trim_end_matches(is_name).len()..];
        out.push_str(before);
        out.push('=');
        let end = after.find(['&', ';', ',']).unwrap_or(after.len());
        if end > 0 && secret_name(name) {
            out.push_str(MASK);
        } else {
            out.push_str(&after[..end]);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// `word` with the password of each URL's `user:password@` masked.
fn mask_url_password(word: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(scheme_end) = rest.find("://") {
        let start = scheme_end + 3;
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority
            .rfind('@')
            .and_then(|at| Some((at, authority[..at].find(':')?)))
        {
            Some((at, colon)) => {
                out.push_str(&authority[..=colon]);
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(args: &[&str]) -> Vec<String> {
        redact(&args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>())
    }

    /// Each `(command line, stored)` of `cases`, the words of each split at spaces.
    fn assert_masked(cases: &[(&str, &str)]) {
        for (line, expected) in cases {
            let args: Vec<&str> = line.split(' ').collect();
            let expected: Vec<&str> = expected.split(' ').collect();
            assert_eq!(redacted(&args), expected, "{line}");
        }
    }

    #[test]
    fn credentials_are_masked_in_the_stored_command_line() {
        for (args, expected) in [
            (
                &["db", "--password=hunter2", "-v"][..],
                &["db", "--password=***", "-v"][..],
            ),
            (
                &["db", "--password", "hunter2", "x"],
                &["db", "--password", "***", "x"],
            ),
            (
                &["db", "--db-password", "hunter2"],
                &["db", "--db-password", "***"],
            ),
            (
                &["job", "token=abc", "secret=def"],
                &["job", "token=***", "secret=***"],
            ),
            (
                &["mysql", "--passwd=x", "--api-key", "k1", "--API_KEY=k2"],
                &["mysql", "--passwd=***", "--api-key", "***", "--API_KEY=***"],
            ),
            (
                &["env", "PGPASSWORD=pw", "MYSQL_PWD=pw", "psql"],
                &["env", "PGPASSWORD=***", "MYSQL_PWD=***", "psql"],
            ),
            (
                &["curl", "https://alice:hunter2@example.com/x?y=1"],
                &["curl", "https://alice:***@example.com/x?y=1"],
            ),
            (
                &["curl", "https://h/x?access_token=abc&page=2"],
                &["curl", "https://h/x?access_token=***&page=2"],
            ),
            (
                &["curl", "-H", "Authorization: Bearer abc def"],
                &["curl", "-H", "Authorization: *** *** ***"],
            ),
            (
                &["sh", "-c", "backup --token abc --to s3://k:s@b/p"],
                &["sh", "-c", "backup --token *** --to s3://k:***@b/p"],
            ),
            (
                &["app", "--opts=user=bob,password=x,port=1"],
                &["app", "--opts=user=bob,password=***,port=1"],
            ),
            (&["app", "--token"], &["app", "--token"]),
        ] {
            assert_eq!(redacted(args), expected, "{args:?}");
        }
        // Negative control: nothing that looks like a secret is changed.
        let plain = [
            "./backup.sh",
            "--to",
            "/srv/backup",
            "--level=9",
            "https://example.com/a?b=c",
            "a  b",
        ];
        assert_eq!(redacted(&plain), plain);
    }

    /// Issue 33, item 6: a secret flag's value is the next word unless that is a flag.
    #[test]
    fn a_flag_after_a_secret_flag_is_not_its_value() {
        assert_masked(&[
            ("db --pass hunter4", "db --pass ***"),
            ("db --password --token t2", "db --password --token ***"),
            ("db --password --pass hunter4 x", "db --password --pass *** x"),
            ("db --secret -v --passwd pw", "db --secret -v --passwd ***"),
            ("openssl enc -pass pass:x -in f", "openssl enc -pass *** -in f"),
        ]);
        // Also across arguments, and within a script.
        assert_eq!(
            redacted(&["sh", "-c", "job --password", "--token t2"]),
            ["sh", "-c", "job --password", "--token ***"]
        );
    }

    /// Issue 33, item 6: the short password flags of the known clients, attached or (where the client takes it so)
    /// the next word; the same flags of other commands kept.
    #[test]
    fn client_password_flags_are_masked_and_other_short_flags_kept() {
        assert_masked(&[
            // MySQL: attached only; a bare -p prompts and the next word is the database; -P is the port.
            ("mysql -uroot -pS3cret db", "mysql -uroot -p*** db"),
            ("mysql -uroot -p db", "mysql -uroot -p db"),
            ("mysql -P 3306 -h db1", "mysql -P 3306 -h db1"),
            (
                "/usr/bin/mysqldump -pS3cret --all-databases",
                "/usr/bin/mysqldump -p*** --all-databases",
            ),
            (
                "sudo -u backup mariadb-dump -pS3cret db",
                "sudo -u backup mariadb-dump -p*** db",
            ),
            ("mysql --password db", "mysql --password ***"),
            // Attached or the next word.
            (
                "sqlcmd -S db1 -U sa -P S3cret -Q q",
                "sqlcmd -S db1 -U sa -P *** -Q q",
            ),
            ("bcp t out f -PS3cret", "bcp t out f -P***"),
            ("sshpass -p S3cret ssh db1", "sshpass -p *** ssh db1"),
            ("mongosh -u admin -p S3cret", "mongosh -u admin -p ***"),
            ("mongodump -pS3cret", "mongodump -p***"),
            ("redis-cli -a S3cret ping", "redis-cli -a *** ping"),
            ("sqlcmd -P -Q q", "sqlcmd -P -Q q"),
            // Erring towards masking: a command run by the client.
            ("sshpass -p pw ssh -p 22 h", "sshpass -p *** ssh -p *** h"),
            // Not a client, or the client's command ended: kept.
            ("mkdir -p /srv/x", "mkdir -p /srv/x"),
            ("ssh -p 22 h", "ssh -p 22 h"),
            ("ssh -p22 h", "ssh -p22 h"),
            ("cp -P a b", "cp -P a b"),
            ("rsync -P -a a b", "rsync -P -a a b"),
            ("mysql -pS3cret db | ssh -p 22 h", "mysql -p*** db | ssh -p 22 h"),
            ("mysql -pS3cret db; mkdir -p x", "mysql -p*** db; mkdir -p x"),
            ("mysql db && tar -pcf x", "mysql db && tar -pcf x"),
            ("sqlcmd -Q q | mongosh -P x", "sqlcmd -Q q | mongosh -P x"),
        ]);
        // Inside a script: the client named in it, after a quote or a `$(`.
        assert_eq!(
            redacted(&["sh", "-c", "x=$(mysql -pS3cret -e 'select 1'); mkdir -p /x"]),
            ["sh", "-c", "x=$(mysql -p*** -e 'select 1'); mkdir -p /x"]
        );
        assert_eq!(
            redacted(&["sh", "-c", "'mysqldump' -pS3cret db"]),
            ["sh", "-c", "'mysqldump' -p*** db"]
        );
    }
}
