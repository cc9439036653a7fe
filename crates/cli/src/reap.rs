//! `zklock reap PATH`: remove the empty recipe directories under a prefix, depth first — what ZooKeeper 3.5+ and
//! `zklock serve` do by themselves for container nodes, for directories made as persistent nodes (by an older
//! zklock, by other tools, or on a server without containers).
//!
//! The rule is ZooKeeper's container rule, made stricter so that it never takes anything but a directory: a node
//! goes when it has **no children** (counting those removed just before it), **no data**, is **not ephemeral**, and
//! **has had children** (`cversion > 0`: a directory made and never used, a set barrier or a double barrier's
//! `ready` stays). Children first, so a chain of parents left empty goes too. Every delete carries the data version
//! the node was read at, and ZooKeeper refuses to delete a node with children, so a contender that queues meanwhile
//! keeps its directory (and one that finds it gone makes it again). `/zookeeper` is never touched, nor is `/`.
//!
//! Prints one line per directory removed (`removed PATH`, or `would remove PATH` with `--dry-run`). A directory
//! whose ACL does not let us list it or delete it is named on stderr and makes the exit status 1.

use zklock::child_path;
use zookeeper_client::{self as zk, Client, Stat};

use crate::cli::ReapArgs;
use crate::exit::{self, Failure};
use crate::zk as conn;

pub async fn reap(args: ReapArgs) -> exit::Result {
    let client = conn::connect_args(&args.connect).await?;
    let result = reap_with(&client, &args.path, args.dry_run).await;
    conn::close(client).await;
    let outcome = result?;
    if outcome.removed == 0 {
        let what = if args.dry_run {
            "nothing would be removed"
        } else {
            "nothing to remove"
        };
        println!("{what}: no empty directory under {}", args.path);
    }
    if outcome.refused > 0 {
        return Err(Failure::new(
            exit::NOT_ALL_REAPED,
            format!(
                "{} director{} under {} could not be removed or looked into (not allowed)",
                outcome.refused,
                if outcome.refused == 1 { "y" } else { "ies" },
                args.path
            ),
        ));
    }
    Ok(exit::OK)
}

/// What a reap did.
#[derive(Debug, Default)]
struct Outcome {
    removed: usize,
    /// Directories left because their ACL does not let us list or delete them.
    refused: usize,
}

/// A node being visited: its children are visited before it is judged.
struct Visit {
    path: String,
    stat: Stat,
    children: Vec<String>,
    /// Children not visited yet are `children[next..]`.
    next: usize,
    /// Children still there (not removed by us, not gone).
    remaining: usize,
}

async fn reap_with(client: &Client, root: &str, dry_run: bool) -> exit::Result<Outcome> {
    let mut outcome = Outcome::default();
    let failed =
        |path: &str, err: zk::Error| Failure::new(exit::UNAVAILABLE, format!("reaping {path}: {err}"));
    let first = match client.get_children(root).await {
        Ok(listed) => listed,
        Err(zk::Error::NoNode) => return Ok(outcome),
        Err(zk::Error::BadArguments(why)) => {
            return Err(Failure::new(exit::USAGE, format!("invalid path {root:?}: {why}")));
        }
        Err(err) => return Err(failed(root, err)),
    };
    let mut stack = vec![visit(root.to_owned(), first)];
    while let Some(top) = stack.last_mut() {
        if top.next < top.children.len() {
            let child = child_path(&top.path, &top.children[top.next]);
            top.next += 1;
            if is_reserved(&child) {
                continue;
            }
            match client.get_children(&child).await {
                Ok(listed) => stack.push(visit(child, listed)),
                // Gone meanwhile (a container swept, a contender left): one child less.
                Err(zk::Error::NoNode) => top.remaining -= 1,
                Err(zk::Error::NoAuth) => {
                    eprintln!("zklock: cannot look into {child}: not allowed (NoAuth); left as it is");
                    outcome.refused += 1;
                }
                Err(err) => return Err(failed(&child, err)),
            }
            continue;
        }
        let done = stack.pop().expect("the top of the stack");
        if done.remaining > 0 || !is_empty_directory(&done.path, &done.stat) {
            continue;
        }
        let removed = if dry_run {
            true
        } else {
            match client.delete(&done.path, Some(done.stat.version)).await {
                Ok(()) => true,
                // A contender queued in it, its data was set, or it went by itself: not ours to remove.
                Err(zk::Error::NotEmpty | zk::Error::BadVersion | zk::Error::NoNode) => false,
                Err(zk::Error::NoAuth) => {
                    eprintln!(
                        "zklock: cannot remove {}: not allowed (NoAuth); left as it is",
                        done.path
                    );
                    outcome.refused += 1;
                    false
                }
                Err(err) => return Err(failed(&done.path, err)),
            }
        };
        if removed {
            outcome.removed += 1;
            let verb = if dry_run { "would remove" } else { "removed" };
            println!("{verb} {}", done.path);
            if let Some(parent) = stack.last_mut() {
                parent.remaining -= 1;
            }
        }
    }
    Ok(outcome)
}

fn visit(path: String, (children, stat): (Vec<String>, Stat)) -> Visit {
    Visit {
        path,
        stat,
        remaining: children.len(),
        children,
        next: 0,
    }
}

/// A directory nobody uses: no data, not ephemeral, and it has had children (a directory made and never used, a
/// set barrier, a double barrier's `ready` stay). Its children are checked by the caller.
fn is_empty_directory(path: &str, stat: &Stat) -> bool {
    !is_reserved(path) && stat.ephemeral_owner == 0 && stat.data_length == 0 && stat.cversion > 0
}

/// `/` and ZooKeeper's own `/zookeeper` subtree (quotas, config) are never reaped.
fn is_reserved(path: &str) -> bool {
    path == "/" || path == "/zookeeper" || path.starts_with("/zookeeper/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(data_length: i32, ephemeral_owner: i64, cversion: i32) -> Stat {
        Stat {
            czxid: 1,
            mzxid: 1,
            pzxid: 1,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion,
            aversion: 0,
            ephemeral_owner,
            data_length,
            num_children: 0,
        }
    }

    #[test]
    fn only_used_empty_directories_qualify() {
        assert!(is_empty_directory("/locks/a", &stat(0, 0, 2)));
        assert!(!is_empty_directory("/locks/a", &stat(0, 0, 0)), "never used");
        assert!(!is_empty_directory("/locks/a", &stat(5, 0, 2)), "has data");
        assert!(!is_empty_directory("/locks/a", &stat(0, 0x1234, 0)), "ephemeral");
        assert!(!is_empty_directory("/", &stat(0, 0, 9)));
        assert!(!is_empty_directory("/zookeeper/quota", &stat(0, 0, 9)));
        assert!(is_empty_directory("/zookeeperish", &stat(0, 0, 1)));
    }
}
