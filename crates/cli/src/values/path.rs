//! ZooKeeper paths: a recipe's PATH, a tree's PATH (`status`, `reap`), and the check a chroot shares.

/// A recipe's PATH (`run`, `elect`, `counter`, `revoke`, `demo --path`): a ZooKeeper path ([`tree_path`]), and not
/// the root.
pub fn recipe_path(text: &str) -> Result<String, String> {
    if text == "/" {
        return Err(
            "invalid path: the root / is not a recipe's path; give its directory, e.g. /locks/backup"
                .to_owned(),
        );
    }
    tree_path(text)
}

/// A PATH checked before anything is connected, so that a mistake is a usage error (exit 64) even when ZooKeeper
/// cannot be reached: absolute, no trailing `/`, no empty, `.` or `..` node name, no control character (as
/// ZooKeeper checks it), and not in ZooKeeper's own `/zookeeper` tree. The root `/` is one (`status /`, `reap /`).
pub fn tree_path(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("invalid path: empty; give an absolute path, e.g. /locks/backup".to_owned());
    }
    if !text.starts_with('/') {
        return Err(format!(
            "invalid path: relative; ZooKeeper paths start with / (did you mean /{text}?)"
        ));
    }
    check_path(text).map_err(|why| format!("invalid path: {why}"))?;
    if text == "/zookeeper" || text.starts_with("/zookeeper/") {
        return Err(
            "invalid path: /zookeeper is ZooKeeper's own tree (quotas, config); choose another path"
                .to_owned(),
        );
    }
    Ok(text.to_owned())
}

/// An absolute path as ZooKeeper takes it.
pub(super) fn check_path(path: &str) -> Result<(), &'static str> {
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err("it ends with '/'");
    }
    for name in path[1..].split('/') {
        match name {
            "" => return Err("it has an empty node name"),
            "." | ".." => return Err("relative paths are not allowed"),
            _ if name.chars().any(char::is_control) => return Err("it has control characters"),
            _ => {}
        }
    }
    Ok(())
}
