//! Checking the paths users give us before anything reaches ZooKeeper.

use crate::base::error::{Error, Result};

/// Checks a recipe directory path the way ZooKeeper does (absolute, no empty, `.` or `..` segments, no
/// trailing slash, no control characters) and returns it owned.
pub(crate) fn validate(path: &str) -> Result<String> {
    let bad = |reason| {
        Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return bad("must start with /");
    }
    if path.len() > 1 && path.ends_with('/') {
        return bad("must not end with /");
    }
    if path.len() > 1 {
        for segment in path[1..].split('/') {
            match segment {
                "" => return bad("empty segment"),
                "." | ".." => return bad("relative segment"),
                _ => {}
            }
        }
    }
    if path
        .chars()
        .any(|c| c.is_control() || ('\u{e000}'..='\u{f8ff}').contains(&c) || c > '\u{ffef}')
    {
        return bad("character not allowed by ZooKeeper");
    }
    Ok(path.to_owned())
}

/// The path of child `name` of directory `dir` (which is `/` or has no trailing slash): `/a` and `b` make `/a/b`,
/// `/` and `a` make `/a`. Public for tools that walk a tree of recipe directories, such as `zklock reap`.
pub fn child_path(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::{child_path, validate};

    #[test]
    fn accepts_and_rejects_like_zookeeper() {
        for good in ["/", "/a", "/a/b-c_d.e", "/locks/orders"] {
            assert!(validate(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a",
            "/a/",
            "//a",
            "/a//b",
            "/a/./b",
            "/a/..",
            "/a\u{1}",
            "/\u{e000}",
        ] {
            assert!(validate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn children_of_the_root_have_one_slash() {
        assert_eq!(child_path("/", "a"), "/a");
        assert_eq!(child_path("/a", "b"), "/a/b");
    }
}
