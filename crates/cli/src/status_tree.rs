//! What `zklock status` looks at: one recipe directory ([`look`]), or every recipe under a path ([`walk`], for
//! `status -r`, issue 33.15), and whether somebody holds one ([`is_held`]). The walk stops at each recipe it
//! recognises (a semaphore's `leases`, a queue's `claims` are the recipe's own) and is bounded: at most
//! [`MOST_NODES`] nodes looked at, a message saying so when there are more. `status.rs` shows what they find.

use std::collections::VecDeque;

use zklock::{Inspection, Recipe, RetryPolicy, Role, Session};
use zookeeper_client::Client;

use crate::exit::{self, Failure};

/// The most nodes one `status -r` looks at.
pub const MOST_NODES: usize = 10_000;

/// What `path` holds (`None`: it does not exist), read once, without retrying.
pub async fn look(client: &Client, path: &str) -> exit::Result<Option<Inspection>> {
    let session = Session::new(client).with_retry(RetryPolicy::default().with_max_attempts(Some(1)));
    zklock::inspect(&session, path).await.map_err(|err| match err {
        zklock::Error::InvalidPath { .. } => Failure::new(exit::USAGE, err.to_string()),
        err => Failure::new(exit::UNAVAILABLE, format!("looking at {path}: {err}")),
    })
}

/// Every recipe under `root` (itself included), found breadth first and returned in the order of their paths.
pub async fn walk(client: &Client, root: &str) -> exit::Result<Vec<Inspection>> {
    let mut queue = VecDeque::from([root.to_owned()]);
    let (mut looked, mut found) = (0, Vec::new());
    while let Some(path) = queue.pop_front() {
        if looked == MOST_NODES {
            eprintln!(
                "zklock: status -r: stopped after {MOST_NODES} nodes under {root}; give a path deeper in the tree"
            );
            break;
        }
        looked += 1;
        match look(client, &path).await? {
            Some(inspection) if is_recipe(&inspection.recipe) => found.push(inspection),
            Some(_) => {
                let mut children = client
                    .list_children(&path)
                    .await
                    .map_err(|err| Failure::new(exit::UNAVAILABLE, format!("listing {path}: {err}")))?;
                children.sort_unstable();
                let base = if path == "/" { "" } else { path.as_str() };
                queue.extend(
                    children
                        .into_iter()
                        .map(|child| format!("{base}/{child}"))
                        .filter(|child| child != "/zookeeper"),
                );
            }
            // Gone meanwhile.
            None => {}
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Whether the walk stops at a node: it is a recipe (not an empty or unrecognised node, which may hold recipes).
fn is_recipe(recipe: &Recipe) -> bool {
    !matches!(recipe, Recipe::Empty | Recipe::Unrecognised { .. })
}

/// Whether somebody holds it, as `status --check` counts: a lock's holder or readers, the leader, a semaphore
/// lease, members inside a double barrier, a group's members.
pub fn is_held(inspection: &Inspection) -> bool {
    inspection
        .participants
        .iter()
        .any(|p| matches!(p.role, Role::Holder | Role::Entered | Role::Member))
}
