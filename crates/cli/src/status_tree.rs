//! `zklock status -r PATH`: every recipe under a path in one overview (issue 33.15) — one line each (the recipe,
//! its holders and since when, those waiting), or with `--json` one array of what `status --json` prints for each.
//! The walk stops at each recipe it recognises (a semaphore's `leases`, a queue's `claims` are the recipe's own) and
//! is bounded: at most [`MOST_NODES`] nodes looked at, a message saying so when there are more.

use std::collections::VecDeque;
use std::time::SystemTime;

use zklock::{Inspection, Recipe, Role};
use zookeeper_client::Client;

use crate::exit::{self, Failure};
use crate::status::{look, recipe_name, Report};

/// The most nodes one `status -r` looks at.
pub const MOST_NODES: usize = 10_000;

/// Walks the tree under `root` (itself included), breadth first, and prints every recipe found; whether somebody
/// holds any of them (for `--check`).
pub async fn show_tree(client: &Client, root: &str, json: bool) -> exit::Result<bool> {
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
                    .map_err(|err| Failure::new(exit::FAILURE, format!("listing {path}: {err}")))?;
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
    // In the order of their paths, as a listing reads.
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let held = found.iter().any(is_held);
    if json {
        let reports: Vec<Report<'_>> = found
            .iter()
            .map(|inspection| Report::new(&inspection.path, Some(inspection), is_held(inspection)))
            .collect();
        let text = serde_json::to_string(&reports)
            .map_err(|err| Failure::new(exit::FAILURE, format!("cannot write JSON: {err}")))?;
        println!("{text}");
    } else if found.is_empty() {
        println!("{root}: no recipe under it");
    } else {
        for inspection in &found {
            println!("{}", line(inspection, SystemTime::now()));
            for warning in &inspection.warnings {
                eprintln!("zklock: warning: {}: {warning}", inspection.path);
            }
        }
    }
    Ok(held)
}

/// Whether the walk stops at a node: it is a recipe (not an empty or unrecognised node, which may hold recipes).
fn is_recipe(recipe: &Recipe) -> bool {
    !matches!(recipe, Recipe::Empty | Recipe::Unrecognised { .. })
}

/// Whether somebody holds it, as `status --check` counts.
pub fn is_held(inspection: &Inspection) -> bool {
    inspection
        .participants
        .iter()
        .any(|p| matches!(p.role, Role::Holder | Role::Entered | Role::Member))
}

/// One recipe's line: `PATH: a lock's directory, 1 holding (for 12s), 2 waiting`.
fn line(inspection: &Inspection, now: SystemTime) -> String {
    let holders: Vec<_> = inspection
        .participants
        .iter()
        .filter(|p| matches!(p.role, Role::Holder | Role::Entered | Role::Member | Role::Voted))
        .collect();
    let waiting = inspection.participants.len() - holders.len();
    let since = holders
        .iter()
        .map(|p| p.created)
        .min()
        .and_then(|oldest| now.duration_since(oldest).ok())
        .map(|age| format!(" (the oldest for {}s)", age.as_secs()))
        .unwrap_or_default();
    let mut text = format!("{}: {}", inspection.path, recipe_name(&inspection.recipe));
    match inspection.recipe {
        Recipe::Queue { items, claimed } | Recipe::PriorityQueue { items, claimed } => {
            text.push_str(&format!(", {items} item(s), {claimed} claimed"));
        }
        Recipe::AtomicLong { value, .. } => text.push_str(&format!(", value {value}")),
        Recipe::SharedCount { value, .. } => text.push_str(&format!(", value {value}")),
        _ => text.push_str(&format!(", {} holding{since}, {waiting} waiting", holders.len())),
    }
    text
}
