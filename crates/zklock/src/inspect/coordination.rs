//! What the coordination recipes' directories show: a group's members, a double barrier's participants, a two-phase commit's parties and votes.

use crate::base::error::Result;
use crate::base::path::child_path;
use crate::inspect::view::{self, NodeKind, Participant, Recipe, Role};
use crate::recipes::coordination::double_barrier::{is_participant, READY};
use crate::recipes::coordination::group::{layout_of, read_members, GroupLayout};
use crate::recipes::coordination::transaction::{
    alive_participant, is_unique, Decision, Look, COORDINATOR, JOINED, OUTCOME, VOTE,
};
use crate::session::{read, Session};

/// What [`inspect`](crate::inspect()) shows of a group (members among its `children`): the members in the order they
/// joined, with their data.
pub(crate) async fn group(
    session: &Session,
    path: &str,
    children: &[String],
) -> Result<Option<(Recipe, Vec<Participant>)>> {
    if !children.iter().any(|name| layout_of(name).is_some()) {
        return Ok(None);
    }
    let members = read_members(session, path, children).await?;
    let participants = members.into_iter().map(|member| Participant {
        kind: match member.layout {
            GroupLayout::Party => NodeKind::GroupMember,
            GroupLayout::Shallow => NodeKind::ShallowGroupMember,
        },
        name: member.name,
        path: member.path,
        sequence: None,
        role: Role::Member,
        session_id: member.session_id,
        fencing_token: member.joined_zxid,
        created: member.joined,
        data_readable: member.data_readable,
        data: member.data,
    });
    Ok(Some((Recipe::Group, participants.collect())))
}

/// What [`inspect`](crate::inspect) shows of a double barrier directory (members or `ready` among its
/// `children`): the members present, by name (the order in which they leave), and whether the barrier is open.
pub(crate) async fn double_barrier(
    session: &Session,
    path: &str,
    children: &[String],
) -> Result<Option<(Recipe, Vec<Participant>)>> {
    let mut members: Vec<&str> = children
        .iter()
        .map(String::as_str)
        .filter(|name| is_participant(name))
        .collect();
    let ready = children.iter().any(|name| name == READY);
    if members.is_empty() && !ready {
        return Ok(None);
    }
    members.sort_unstable();
    let role = if ready { Role::Entered } else { Role::Waiting };
    let participants = view::read_members(session, path, &members, NodeKind::Member, role).await?;
    Ok(Some((Recipe::DoubleBarrier { ready }, participants)))
}

/// What [`inspect`](crate::inspect()) shows of a transaction node (its `children`): the coordinator, the votes and
/// the participants still waiting, with the counts and the outcome in [`Recipe::Transaction`].
pub(crate) async fn two_phase_commit(
    session: &Session,
    path: &str,
    children: &[String],
) -> Result<Option<(Recipe, Vec<Participant>)>> {
    let ours = |c: &String| {
        c == OUTCOME
            || c.strip_prefix(COORDINATOR).is_some_and(is_unique)
            || c.starts_with(JOINED)
            || c.starts_with(VOTE)
            || alive_participant(c).is_some()
    };
    if children.is_empty() || !children.iter().all(ours) {
        return Ok(None);
    }
    let (client, retry) = (session.client(), session.retry());
    let listed: Vec<String> = match read::read_node(client, retry, path).await? {
        Some((Some(data), _)) => String::from_utf8_lossy(&data)
            .lines()
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let look = Look::of(children);
    // Rows: the coordinator, then per participant (in the listed order, then any other) its vote or its node.
    let mut rows: Vec<(String, NodeKind, Role)> = children
        .iter()
        .filter(|c| c.starts_with(COORDINATOR))
        .map(|c| (c.clone(), NodeKind::Coordinator, Role::Holder))
        .collect();
    let mut names: Vec<String> = listed.clone();
    for p in look.voted.iter().chain(&look.alive) {
        if !names.contains(p) {
            names.push(p.clone());
        }
    }
    for p in &names {
        if look.voted.contains(p) {
            rows.push((format!("{VOTE}{p}"), NodeKind::Vote, Role::Voted));
        } else if let Some(alive) = children.iter().find(|c| alive_participant(c) == Some(p.as_str())) {
            rows.push((alive.clone(), NodeKind::TransactionParticipant, Role::Waiting));
        }
    }
    let row_names: Vec<&str> = rows.iter().map(|(name, _, _)| name.as_str()).collect();
    let read = read::read_nodes(session, path, &row_names).await?;
    let shown: Vec<Participant> = rows
        .iter()
        .zip(read)
        .filter_map(|((name, kind, role), read)| {
            let (data, stat) = read?;
            Some(view::participant(path, name, None, *kind, *role, data, &stat))
        })
        .collect();
    let commit_votes = shown
        .iter()
        .filter(|p| p.kind == NodeKind::Vote && p.data == Decision::Commit.bytes())
        .count();
    let outcome = if look.outcome {
        let outcome_path = child_path(path, OUTCOME);
        match read::read_node(client, retry, &outcome_path).await? {
            Some((Some(data), _)) => Decision::parse(&outcome_path, &data).ok(),
            _ => None,
        }
    } else {
        None
    };
    let recipe = Recipe::Transaction {
        participants: listed.len(),
        joined: look.joined.len(),
        votes: look.voted.len(),
        commit_votes,
        outcome,
    };
    Ok(Some((recipe, shown)))
}

/// What [`inspect`](crate::inspect()) shows of a service directory of curator-x-discovery's layout: children whose
/// data is an instance of the service named as the directory, with the child's name as its id. The instances, in
/// the order they registered.
pub(crate) async fn service(
    session: &Session,
    path: &str,
    children: &[String],
) -> Result<Option<(Recipe, Vec<Participant>)>> {
    let service = path.rsplit('/').next().unwrap_or_default();
    let instance = |p: &Participant| {
        serde_json::from_slice::<crate::recipes::discovery::service::ServiceInstance>(&p.data)
            .is_ok_and(|i| i.name == service && i.id == p.name)
    };
    // One child read first: the others only if it is an instance (a directory of anything else costs one read).
    let Some(first) = children.first() else {
        return Ok(None);
    };
    let probe = view::read_members(
        session,
        path,
        &[first.as_str()],
        NodeKind::ServiceInstance,
        Role::Member,
    )
    .await?;
    if !probe.iter().any(instance) {
        return Ok(None);
    }
    let names: Vec<&str> = children.iter().map(String::as_str).collect();
    let mut instances =
        view::read_members(session, path, &names, NodeKind::ServiceInstance, Role::Member).await?;
    instances.retain(instance);
    if instances.is_empty() {
        return Ok(None);
    }
    instances.sort_by_key(|p| p.fencing_token);
    Ok(Some((Recipe::Service, instances)))
}
