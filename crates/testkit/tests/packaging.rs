//! The published crates package: `cargo package` succeeds for all of them together (none is on crates.io yet, so
//! cargo resolves each one's workspace dependencies through a temporary local registry of the others), and every
//! package holds both licence texts and nothing that cannot be used from the package alone: no Java or Python peer,
//! no test or example that needs the unpublished zklock-testkit (a path-only dev-dependency, which cargo drops from
//! the packaged manifest).
//!
//! The packages are not verified (`--no-verify`): building each one from its `.crate` compiles every dependency
//! again in a target directory of its own (aws-lc-sys among them, a large C build) — measured at 9 minutes for
//! the library crates and 17 for all six on a shared two-core machine, against 3 seconds unverified: far too much
//! for every run of the suite. Verify by hand before publishing:
//! `cargo package -p zklock-codec -p zklock-storage -p zklock-server -p zklock -p zklock-bench -p zklock-cli`.
//! Nothing is uploaded; `--offline` resolves against the index cache that building the workspace filled.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The published crates (name, directory) in dependency order: everything in `crates/` without `publish = false`.
const PUBLISHED: &[(&str, &str)] = &[
    ("zklock-codec", "crates/codec"),
    ("zklock-storage", "crates/storage"),
    ("zklock-server", "crates/server"),
    ("zklock", "crates/zklock"),
    ("zklock-bench", "crates/bench"),
    ("zklock-cli", "crates/cli"),
];

const LICENCES: &[&str] = &["LICENSE-MIT", "LICENSE-APACHE"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// `cargo` with `args`, in the workspace root, into `target_dir` (never the workspace's own target directory, which
/// other cargo commands of the suite lock).
fn cargo(args: &[&str], target_dir: &Path) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(args)
        .current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", target_dir)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {} failed ({}):\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn every_crate_not_marked_unpublished_is_checked() {
    let root = workspace_root();
    let mut published: Vec<String> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|entry| entry.expect("an entry of crates/").path())
        .filter(|dir| {
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
            !manifest.is_empty() && !manifest.lines().any(|line| line.trim() == "publish = false")
        })
        .map(|dir| format!("crates/{}", dir.file_name().unwrap().to_string_lossy()))
        .collect();
    published.sort();
    let mut checked: Vec<String> = PUBLISHED.iter().map(|(_, dir)| dir.to_string()).collect();
    checked.sort();
    assert_eq!(
        published, checked,
        "the crates without `publish = false` are the ones PUBLISHED lists"
    );
}

#[test]
fn published_crates_package() {
    let root = workspace_root();
    let target = tempfile::tempdir().expect("a temporary target directory");
    let mut args = vec!["package", "--no-verify", "--allow-dirty", "--offline"];
    for (name, _) in PUBLISHED {
        args.extend(["-p", name]);
    }
    cargo(&args, target.path());

    for (name, dir) in PUBLISHED {
        let crate_file = target
            .path()
            .join("package")
            .join(format!("{name}-{}.crate", env!("CARGO_PKG_VERSION")));
        assert!(crate_file.is_file(), "{} was not written", crate_file.display());

        let listed = cargo(
            &["package", "--list", "--allow-dirty", "--offline", "-p", name],
            target.path(),
        );
        let files: Vec<String> = String::from_utf8(listed.stdout)
            .expect("file names in UTF-8")
            .lines()
            .map(str::to_owned)
            .collect();
        let dir = root.join(dir);

        for licence in LICENCES.iter().chain(&["README.md"]) {
            assert!(
                files.iter().any(|f| f == licence),
                "{name}'s package has no {licence}: {files:?}"
            );
        }
        for licence in LICENCES {
            // The crate's copy (a symlink, which cargo packs as the file it points to) is the workspace's text.
            assert_eq!(
                std::fs::read(dir.join(licence)).ok(),
                std::fs::read(root.join(licence)).ok(),
                "{name}'s {licence} is not the workspace's"
            );
        }
        for file in &files {
            assert!(
                !file.ends_with(".java") && !file.ends_with(".py"),
                "{name}'s package holds a peer of another language: {file}"
            );
            // Tests, examples, benches and build scripts: a target the package cannot build without zklock-testkit;
            // unit tests inside src/ may use it only behind the `workspace-tests` feature (off in the package).
            if file.ends_with(".rs") {
                let text = std::fs::read_to_string(dir.join(file)).expect("a packaged file");
                let gated = file.starts_with("src/") && text.contains("feature = \"workspace-tests\"");
                assert!(
                    !text.contains("zklock_testkit") || gated,
                    "{name}'s package holds {file}, which needs the unpublished zklock-testkit"
                );
            }
        }
    }
}
