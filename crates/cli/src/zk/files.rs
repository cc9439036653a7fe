//! Reading the files the flags name (`--auth-file`, `--sasl-password-file`, the TLS files): a file that cannot be
//! read is a usage error naming the flag and the file; one that holds a secret is checked to be private.

use std::path::Path;

use anyhow::Result;

use super::usage;

/// The text of the file `flag` names.
pub(super) fn read(path: &Path, flag: &str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|err| usage(format!("{flag} {}: {err}", path.display())))
}

/// Like [`read`], for a file that holds a secret: warns (once, on stderr) when other users may read it.
pub(super) fn read_private(path: &Path, flag: &str) -> Result<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let text = read(path, flag)?;
    if let Ok(metadata) = std::fs::metadata(path) {
        let mode = metadata.permissions().mode() & 0o777;
        // Once per file and process: the files are read again for each session (issue 33.9).
        static WARNED: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
        let first = {
            let mut warned = WARNED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let first = !warned.iter().any(|p| p == path);
            if first {
                warned.push(path.to_path_buf());
            }
            first
        };
        if mode & 0o044 != 0 && first {
            crate::say::warn(format_args!(
                "warning: {flag} {} can be read by other users (mode {mode:03o}); chmod 600 it",
                path.display()
            ));
        }
    }
    Ok(text)
}
