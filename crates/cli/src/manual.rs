//! `zklock completions SHELL` and `zklock man`: generated from the same clap definitions as `--help`, so they can
//! never disagree with the binary that prints them.

use std::io::Write as _;

use crate::cli::Cli;
use crate::exit::{self, Failure};

/// Writes the completion script for `shell` to stdout.
pub fn completions(shell: clap_complete::Shell) -> exit::Result {
    let mut command = Cli::built();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "zklock", &mut out);
    emit(&out)
}

/// Writes the manual page (roff) of `zklock` and its subcommands to stdout: one page, with a section per
/// subcommand, so `man zklock` shows everything.
pub fn man() -> exit::Result {
    let command = Cli::built();
    let mut out = Vec::new();
    let render = |out: &mut Vec<u8>| -> std::io::Result<()> {
        let man = clap_mangen::Man::new(command.clone());
        man.render_title(out)?;
        man.render_name_section(out)?;
        man.render_synopsis_section(out)?;
        man.render_description_section(out)?;
        man.render_options_section(out)?;
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
            let name = format!("zklock {}", sub.get_name());
            writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
            let page = clap_mangen::Man::new(sub.clone().bin_name(name));
            let mut part = Vec::new();
            page.render_synopsis_section(&mut part)?;
            page.render_description_section(&mut part)?;
            page.render_options_section(&mut part)?;
            page.render_extra_section(&mut part)?;
            out.extend_from_slice(demote_sections(&String::from_utf8_lossy(&part)).as_bytes());
        }
        man.render_version_section(out)?;
        Ok(())
    };
    render(&mut out)
        .map_err(|err| Failure::new(exit::OUTPUT_FAILURE, format!("rendering the manual: {err}")))?;
    emit(&out)
}

/// A subcommand's page becomes part of the one page: its sections turn into subsections of the subcommand's
/// section (`.SH OPTIONS` into `.SS Options`; the exit-status table that `--help` shows last is clap's "extra").
fn demote_sections(part: &str) -> String {
    part.lines()
        .map(|line| match line.strip_prefix(".SH ") {
            Some(title) => {
                let title = match title {
                    "EXTRA" => "Exit status and notes".to_owned(),
                    other => {
                        let lower = other.to_lowercase();
                        let mut chars = lower.chars();
                        chars
                            .next()
                            .map_or(String::new(), |first| first.to_uppercase().chain(chars).collect())
                    }
                };
                format!(".SS \"{title}\"\n")
            }
            None => format!("{line}\n"),
        })
        .collect()
}

fn emit(bytes: &[u8]) -> exit::Result {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|err| Failure::new(exit::OUTPUT_FAILURE, format!("writing to stdout: {err}")))?;
    Ok(exit::OK)
}
