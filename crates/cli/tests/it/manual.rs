//! `zklock completions` and `zklock man`: generated from the clap definitions, for every subcommand.

use crate::support::{exit, output, temp_file, text};

/// The subcommands a user sees (the internal `__watchdog` must not show up).
const SUBCOMMANDS: &[&str] = &[
    "run",
    "elect",
    "status",
    "serve",
    "demo",
    "bench",
    "revoke",
    "reap",
    "counter",
    "watch",
    "register",
    "discover",
    "completions",
    "man",
];

#[tokio::test]
async fn completions_cover_every_subcommand_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = output(&["completions", shell]).await;
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: no `{sub}` in the script");
        }
        assert!(
            !script.contains("__watchdog"),
            "{shell}: the internal command is offered"
        );
        // A flag of a subcommand, so the scripts go below the top level.
        assert!(
            script.contains("nonblock"),
            "{shell}: `run --nonblock` is not completed"
        );
    }
}

#[tokio::test]
async fn bash_completion_script_is_valid_bash() {
    let out = output(&["completions", "bash"]).await;
    let (_dir, script) = temp_file("zklock.bash", &out.stdout);
    // `bash -n` parses without running; then sourcing must define the completion for `zklock`.
    let check = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "bash -n {0} && source {0} && complete -p zklock",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("zklock"), "{}", text(&check.stdout));
}

#[tokio::test]
async fn man_page_has_a_section_per_subcommand() {
    let out = output(&["man"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.starts_with(".TH"),
        "not roff: {}",
        &page[..page.len().min(80)]
    );
    assert!(page.contains(".TH zklock 1"), "no title line");
    for sub in SUBCOMMANDS {
        assert!(
            page.contains(&format!(".SH \"ZKLOCK {}\"", sub.to_uppercase())),
            "no section for `{sub}`"
        );
    }
    assert!(!page.contains("__watchdog"));
    // The exit-status tables of `--help` are in the page too.
    assert!(page.contains("Exit status"), "no exit statuses");
}

#[tokio::test]
async fn unknown_shell_is_a_usage_error() {
    let out = output(&["completions", "tcsh"]).await;
    assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
}

#[tokio::test]
async fn help_lists_every_subcommand_and_cites_no_module() {
    let out = output(&["--help"]).await;
    let help = text(&out.stdout);
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert_eq!(listed, SUBCOMMANDS_IN_HELP_ORDER, "{help}");
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    let mut known = SUBCOMMANDS.to_vec();
    known.sort_unstable();
    assert_eq!(
        sorted, known,
        "a subcommand missing from SUBCOMMANDS (and so from the man page check)"
    );
    // The one-line description names every command that does something.
    let about = help.lines().next().unwrap();
    for sub in SUBCOMMANDS
        .iter()
        .filter(|sub| !matches!(**sub, "completions" | "man"))
    {
        assert!(about.contains(sub), "{sub} not in {about:?}");
    }
    for sub in SUBCOMMANDS {
        let out = output(&[sub, "--help"]).await;
        let help = text(&out.stdout);
        // A module path (`supervise::lost_policy`), not a type's item (`Client::lock`).
        let module = help
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .find(|word| word.contains("::") && word.starts_with(|c: char| c.is_lowercase()));
        assert_eq!(module, None, "`zklock {sub} --help` cites a module: {help}");
    }
    let out = output(&["--version"]).await;
    assert_eq!(
        text(&out.stdout).trim(),
        format!("zklock {}", env!("CARGO_PKG_VERSION"))
    );
}

/// `zklock --help`'s order.
const SUBCOMMANDS_IN_HELP_ORDER: &[&str] = &[
    "run",
    "elect",
    "status",
    "counter",
    "demo",
    "bench",
    "serve",
    "revoke",
    "reap",
    "watch",
    "register",
    "discover",
    "completions",
    "man",
];

/// `zklock man | head`, `zklock completions bash | head`: a reader that goes away ends the command quietly, by
/// SIGPIPE's default action as for `ls | head` — no "Broken pipe" error. The reader here is gone before anything is
/// written (its end of the pipe is closed at once), so the first write meets a closed pipe.
#[tokio::test]
async fn a_reader_that_goes_away_ends_the_output_quietly() {
    use std::os::unix::process::ExitStatusExt as _;
    for args in [&["man"][..], &["completions", "bash"]] {
        // The reader is gone before zklock starts (else output that fits in the pipe could all be written first).
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let child = crate::support::zklock(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start zklock");
        let out = tokio::time::timeout(crate::support::EVENTUALLY, child.wait_with_output())
            .await
            .expect("zklock ended")
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(13),
            "{args:?}: ended by SIGPIPE: {:?}",
            out.status
        );
        assert_eq!(text(&out.stderr), "", "{args:?}: nothing said");
    }
}

/// Each command's own options are under "Options", not under the "Authentication and TLS" heading that the shared
/// security options bring (issue 33.9: `bench --help` listed --duration there, `run --help` --shared).
#[tokio::test]
async fn own_options_are_not_under_the_security_heading() {
    for (command, own) in [
        ("run", "--shared"),
        ("elect", "--observe"),
        ("status", "--check"),
        ("counter", "--kind"),
        ("revoke", "--request"),
        ("reap", "--dry-run"),
        ("bench", "--duration"),
    ] {
        let help = text(&output(&[command, "--help"]).await.stdout);
        let lines: Vec<&str> = help.lines().collect();
        // The line of an option: `      --flag …` or `  -f, --flag …`.
        let line_of = |flag: &str| {
            lines.iter().position(|l| {
                let l = l.trim_start();
                l.starts_with(flag) || l.split_once(", ").is_some_and(|(_, rest)| rest.starts_with(flag))
            })
        };
        let heading = lines.iter().position(|l| *l == "Authentication and TLS:");
        let heading = heading.unwrap_or_else(|| panic!("{command}: {help}"));
        let at = line_of(own).unwrap_or_else(|| panic!("{command}: no {own}: {help}"));
        assert!(
            at < heading,
            "{command}: {own} under the security heading:\n{help}"
        );
        assert!(
            line_of("--tls-ca").is_some_and(|tls| tls > heading),
            "{command}: {help}"
        );
    }
}
