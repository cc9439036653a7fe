//! `zklock revoke PATH`: take a lock, a lease or leadership away from its holder — by deleting the holder's node
//! (`zklock::revoke`), or by asking it to give up (`--request`, `zklock::request_revocation`: Curator's revocation
//! protocol). It finds the holders with `zklock::inspect`, like `zklock status`, and knows no node layouts.
//!
//! Without `--node` it revokes every holder the inspection shows: a mutex's holder, all the readers sharing a
//! read/write lock, every lease holder of a semaphore, an election's leader. `--node NAME` names one participant
//! instead, holder or waiter (a waiter's acquire then fails: `zklock run` exits 69 saying its node was deleted).
//! Each node is printed with whose it was: its role, session, fencing token and data.
//!
//! Exit statuses (`exit::TABLE`): 0 revoked (or, with `--dry-run`, something to revoke); 1 nothing to revoke; 64
//! a usage error, also for a directory of another recipe (a queue, a barrier); 69 ZooKeeper failing, or refusing us
//! (`NoAuth`).

use zklock::{Inspection, Participant, Recipe, RetryPolicy, Role, Session};

use crate::cli::RevokeArgs;
use crate::exit::{self, Failure};
use crate::status::label;
use crate::zk;

/// Attempts per request: a revocation is an operator's one-off, so a server that keeps failing is reported.
const ATTEMPTS: u32 = 5;

pub async fn revoke(args: RevokeArgs) -> exit::Result {
    let client = zk::connect_args(&args.connect).await?;
    let session = Session::new(&client).with_retry(RetryPolicy::default().with_max_attempts(Some(ATTEMPTS)));
    let result = revoke_with(&args, &session).await;
    zk::close(client).await;
    result
}

async fn revoke_with(args: &RevokeArgs, session: &Session) -> exit::Result {
    let path = &args.path;
    let found = zklock::inspect(session, path).await.map_err(|err| match err {
        zklock::Error::InvalidPath { .. } => Failure::new(exit::USAGE, err.to_string()),
        err => Failure::new(exit::UNAVAILABLE, format!("looking at {path}: {err}")),
    })?;
    let targets = targets(path, found, args.node.as_deref())?;
    let mut revoked = 0;
    for target in &targets {
        let whose = whose(target);
        let done = if args.dry_run {
            Ok(true)
        } else if args.request {
            zklock::request_revocation(session, &target.path).await
        } else {
            zklock::revoke(session, &target.path).await
        }
        .map_err(|err| Failure::new(exit::UNAVAILABLE, format!("revoking {}: {err}", target.path)))?;
        let verb = match (args.dry_run, args.request) {
            (true, true) => "would ask to give up",
            (true, false) => "would revoke",
            (false, true) => "asked to give up",
            (false, false) => "revoked",
        };
        if done {
            revoked += 1;
            println!("{verb} {}: {whose}", target.path);
        } else {
            println!("already gone: {}: {whose}", target.path);
        }
    }
    if revoked == 0 {
        return Err(Failure::new(
            exit::NOTHING_TO_REVOKE,
            format!("nothing revoked: the nodes of {path} went before we got to them"),
        ));
    }
    Ok(exit::OK)
}

/// The participants to revoke: the one `--node` names, or every holder. A failure when there is nothing to revoke
/// (exit 1) or PATH is no lock, semaphore or election (exit 64).
fn targets(path: &str, found: Option<Inspection>, node: Option<&str>) -> exit::Result<Vec<Participant>> {
    let nothing = |why: String| Err(Failure::new(exit::NOTHING_TO_REVOKE, why));
    let Some(found) = found else {
        return nothing(format!("nothing to revoke: {path} does not exist"));
    };
    match found.recipe {
        Recipe::Lock | Recipe::Election | Recipe::Semaphore { .. } => {}
        Recipe::Empty => return nothing(format!("nothing to revoke: {path} has no contenders")),
        Recipe::Queue { .. } => return Err(not_revocable(path, "a queue")),
        Recipe::DoubleBarrier { .. } => return Err(not_revocable(path, "a double barrier")),
        _ => return Err(not_revocable(path, "not a recipe directory zklock recognises")),
    }
    if let Some(node) = node {
        let named = found
            .participants
            .into_iter()
            .find(|p| p.name == node || p.path == node);
        return match named {
            Some(named) => Ok(vec![named]),
            None => nothing(format!(
                "nothing to revoke: {node} is not a participant of {path} (see zklock status {path})"
            )),
        };
    }
    let holders: Vec<Participant> = found
        .participants
        .into_iter()
        .filter(|p| p.role == Role::Holder)
        .collect();
    if holders.is_empty() {
        return nothing(format!("nothing to revoke: nobody holds {path}"));
    }
    Ok(holders)
}

fn not_revocable(path: &str, what: &str) -> Failure {
    Failure::new(
        exit::USAGE,
        format!("{path} is {what}: only a lock, a semaphore or an election can be revoked"),
    )
}

/// Whose node it is, in words: `holder, session 0x…, fencing token N, data "…"`.
fn whose(p: &Participant) -> String {
    format!(
        "{}, session 0x{:x}, fencing token {}, data {:?}",
        label(p),
        p.session_id,
        p.fencing_token,
        String::from_utf8_lossy(&p.data)
    )
}
