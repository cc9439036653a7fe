//! docs/operations.md as an operator pastes it: every systemd unit passes `systemd-analyze verify` with nothing to
//! say (systemd 252 only warns about a key in the wrong section, e.g. `StartLimitIntervalSec` in `[Service]`, and
//! ignores it), and every install line that writes a file makes its directory first.

use std::path::Path;

const GUIDE: &str = include_str!("../../../../docs/operations.md");

/// Each ```ini block of `doc` with the unit file name the line before it gives
/// ("`/etc/systemd/system/NAME.service`:").
fn units(doc: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if *line != "```ini" {
            continue;
        }
        let name = lines[..i]
            .iter()
            .rev()
            .find(|line| !line.trim().is_empty())
            .and_then(|line| line.strip_prefix("`/etc/systemd/system/"))
            .and_then(|rest| rest.strip_suffix("`:"))
            .unwrap_or_else(|| {
                panic!(
                    "the unit at line {} has no `/etc/systemd/system/NAME`: above it",
                    i + 1
                )
            });
        let body: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|line| **line != "```")
            .copied()
            .collect();
        found.push((name.to_owned(), body.join("\n") + "\n"));
    }
    found
}

/// `systemd-analyze verify` of `text` as the unit `name`: `Err` with what it said unless it exits 0 and says
/// nothing. The binaries the units start are replaced by ones that exist here (systemd checks them): `zklock` by
/// the one under test, any other `/usr/local/bin/…` by `true`.
fn verify(name: &str, text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let text = text.replace("/usr/local/bin/zklock", env!("CARGO_BIN_EXE_zklock"));
    let text = replace_local_bins(&text);
    let unit = dir.path().join(name);
    std::fs::write(&unit, text).unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit)
        .output()
        .unwrap_or_else(|err| {
            panic!(
                "cannot run systemd-analyze ({err}): install Debian's `systemd` package to check the units"
            )
        });
    let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if out.status.success() && said.is_empty() {
        Ok(())
    } else {
        Err(format!("{name}: {} {said}", out.status))
    }
}

/// `/usr/local/bin/NAME` (other than zklock, already replaced) becomes `/usr/bin/true`.
fn replace_local_bins(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            if word.starts_with("/usr/local/bin/") {
                "/usr/bin/true"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_unit_of_the_guide_verifies_cleanly() {
    let units = units(GUIDE);
    let names: Vec<&str> = units.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["zklock-serve.service", "scheduler.service"]);
    for (name, text) in &units {
        verify(name, text).unwrap();
    }
}

#[test]
fn a_start_limit_in_the_service_section_is_caught() {
    // Negative control: the mistake the guide used to make.
    let (name, text) = units(GUIDE).into_iter().next().unwrap();
    assert!(text.contains("StartLimitIntervalSec=60\n"), "{text}");
    let misplaced = text
        .replace("StartLimitIntervalSec=60\n", "")
        .replace("[Service]\n", "[Service]\nStartLimitIntervalSec=60\n");
    let err = verify(&name, &misplaced).unwrap_err();
    assert!(
        err.contains("Unknown key 'StartLimitIntervalSec' in section [Service]"),
        "{err}"
    );
    // And a unit that is not one at all.
    assert!(verify(&name, "[Service]\nExecStart=relative/path\n").is_err());
}

/// The directories each ```sh block writes into (`> /dir/file`) that no `mkdir -p` line before it makes.
fn unmade_directories(doc: &str) -> Vec<String> {
    let mut unmade = Vec::new();
    let mut made: Vec<String> = Vec::new();
    let mut in_sh = false;
    for line in doc.lines() {
        match line {
            "```sh" => {
                in_sh = true;
                made.clear();
                continue;
            }
            "```" => in_sh = false,
            _ => {}
        }
        if !in_sh {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.starts_with(&["mkdir", "-p"]) {
            made.extend(
                words[2..]
                    .iter()
                    .take_while(|w| !w.starts_with('#'))
                    .map(|w| (*w).to_owned()),
            );
        }
        for pair in words.windows(2) {
            if pair[0] == ">" && pair[1].starts_with('/') {
                let dir = Path::new(pair[1])
                    .parent()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if !made.contains(&dir) {
                    unmade.push(dir);
                }
            }
        }
    }
    unmade
}

#[test]
fn install_lines_make_their_directories() {
    assert_eq!(unmade_directories(GUIDE), Vec::<String>::new());
    // Negative control: the lines without their mkdir.
    let without = "```sh\nzklock man > /usr/local/share/man/man1/zklock.1\n```\n";
    assert_eq!(unmade_directories(without), ["/usr/local/share/man/man1"]);
}
