//! Path validation, exactly ZooKeeper's `PathUtils.validatePath` rules.

/// Checks a client path: starts with `/`, no trailing `/` (except the root), no empty, `.` or `..`
/// segment, no control characters, nothing in U+D800–F8FF or U+FFF0–FFFF, nothing outside the BMP.
pub fn validate(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        return Err("path length must be > 0");
    }
    if !path.starts_with('/') {
        return Err("path must start with / character");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err("path must not end with / character");
    }
    for seg in path[1..].split('/') {
        match seg {
            "" => return Err("empty node name specified"),
            "." | ".." => return Err("relative paths not allowed"),
            _ => {}
        }
    }
    // Java checks UTF-16 units: surrogates (U+D800–DFFF, hence every non-BMP character) and the private-use
    // area up to U+F8FF are refused. Surrogates cannot occur in a Rust `str`, so non-BMP stands in for them.
    let bad = |c: char| {
        matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
            || u32::from(c) > 0xffff
    };
    if path.chars().any(bad) {
        return Err("invalid character");
    }
    Ok(())
}

/// The parent of a valid non-root path (`/a/b` → `/a`, `/a` → `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a valid non-root path.
pub fn basename(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// `parent + "/" + child`, without doubling the root's slash.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_invalid_paths() {
        for ok in ["/", "/a", "/a/b", "/a.b", "/...", "/é", "/a b"] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/a/..",
            "/a\u{0}",
            "/\u{7f}",
            "/\u{9f}",
            "/\u{e000}",
            "/\u{fff0}",
            "/\u{ffff}",
            "/\u{10000}",
            "/\u{fffd}",
        ] {
            assert!(validate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn parent_and_basename() {
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b/c"), "/a/b");
        assert_eq!(basename("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }
}
