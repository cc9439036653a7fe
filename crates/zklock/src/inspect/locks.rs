//! What the lock family's directories show: a queue of contenders (a lock's, an election's) and a semaphore's leases and waiters.

use crate::base::error::Result;
use crate::base::names::Marker;
use crate::base::path::child_path;
use crate::base::{idioms, names};
use crate::engine::Rules as _;
use crate::inspect::view::{self, read_contenders, NodeKind, Participant, Recipe, Role};
use crate::recipes::locks::semaphore::{is_lease, leases_dir, GATE};
use crate::session::Session;

/// A lock's or an election's queue: every child that is a contender node of any known format, in queue order.
/// The readers at the head of the queue share the lock; otherwise the first contender holds alone (the lock's
/// holder, the election's leader).
pub(crate) async fn contenders(
    session: &Session,
    dir: &str,
    children: Vec<String>,
) -> Result<Option<(Recipe, Vec<Participant>)>> {
    let queue = names::sorted_contenders(children, |_| true);
    if queue.is_empty() {
        return Ok(None);
    }
    let recipe = if queue.iter().any(|c| c.marker == Marker::Latch) {
        Recipe::Election
    } else {
        Recipe::Lock
    };
    let mut participants = read_contenders(session, dir, &queue, Role::Waiting).await?;
    let readers = participants
        .iter()
        .take_while(|p| matches!(p.kind, NodeKind::Read | NodeKind::KazooRead))
        .count();
    for participant in participants.iter_mut().take(readers.max(1)) {
        participant.role = Role::Holder;
    }
    Ok(Some((recipe, participants)))
}

/// What [`inspect`](crate::inspect) shows of a semaphore directory (`leases` or `locks` among its `children`: both
/// are container nodes, so the server deletes `locks` while nobody acquires, and `leases` while nobody holds; and
/// [`names::is_semaphore`] says it is one): the leases held, then every acquirer queued in the gate, in order.
///
/// The acquirer at the head of the gate creates its lease node *before* it knows whether there is room, and keeps
/// it while it waits: that node (owned by the head's session, created after the head's gate node) waits; it holds
/// no lease.
pub(crate) async fn semaphore(
    session: &Session,
    path: &str,
    children: &[String],
) -> Result<Option<(Recipe, Vec<Participant>)>> {
    if !children.iter().any(|c| c == names::LEASES || c == names::LOCKS) {
        return Ok(None);
    }
    let (client, retry) = (session.client(), session.retry());
    let (leases_dir, locks_dir) = (leases_dir(path), child_path(path, names::LOCKS));
    let leases = idioms::list_or_empty(client, retry, &leases_dir).await?;
    let locks = idioms::list_or_empty(client, retry, &locks_dir).await?;
    // The number of leases zklock records as the `leases` directory's data (Curator records none).
    let recorded = session
        .get(&leases_dir)
        .await?
        .and_then(|(data, _)| decimal(&data));
    if !names::is_semaphore(children, &leases, &locks) {
        return Ok(None);
    }
    let leases = names::sorted_contenders(leases, is_lease);
    let gate = names::sorted_contenders(locks, |m| GATE.keeps(m));
    // Every acquirer in the gate, in its order. The one at its head may have made a lease node already, before
    // knowing whether there is room: that lease is not held yet; it is shown (waiting) in the head's place.
    let mut queued = view::read_contenders(session, &locks_dir, &gate, Role::Waiting).await?;
    let (held, waiting): (Vec<Participant>, Vec<Participant>) =
        view::read_contenders(session, &leases_dir, &leases, Role::Holder)
            .await?
            .into_iter()
            .partition(|lease| {
                !queued.first().is_some_and(|head| {
                    lease.session_id == head.session_id && lease.fencing_token > head.fencing_token
                })
            });
    if !waiting.is_empty() {
        queued.remove(0);
    }
    let waiting = waiting.into_iter().map(|lease| Participant {
        role: Role::Waiting,
        ..lease
    });
    Ok(Some((
        Recipe::Semaphore {
            acquirers: gate.len(),
            leases: recorded,
        },
        held.into_iter().chain(waiting).chain(queued).collect(),
    )))
}

/// kazoo's `Semaphore`: the directory holds its number of leases as decimal data, each lease is an ephemeral node
/// named by a uuid's 32 hex digits, and acquirers queue in a kazoo `Lock` at the sibling `PATH-__lock__`. Told apart
/// from a double barrier (whose members are also named by uuids) by that number: the leases, held.
pub(crate) async fn kazoo_semaphore(
    session: &Session,
    path: &str,
    children: &[String],
) -> Result<Option<(Recipe, Vec<Participant>)>> {
    let uuid_hex = |name: &String| name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit());
    if children.is_empty() || !children.iter().all(uuid_hex) {
        return Ok(None);
    }
    let Some((data, _)) = session.get(path).await? else {
        return Ok(None);
    };
    let Some(leases) = decimal(&data) else {
        return Ok(None);
    };
    let names: Vec<&str> = children.iter().map(String::as_str).collect();
    let mut held = view::read_members(session, path, &names, NodeKind::Lease, Role::Holder).await?;
    held.sort_by_key(|p| p.fencing_token);
    let acquirers = session.list_or_empty(&format!("{path}-__lock__")).await?.len();
    Ok(Some((
        Recipe::Semaphore {
            acquirers,
            leases: Some(leases),
        },
        held,
    )))
}

/// A warning when a lock queue mixes kazoo's node names with Curator's (zklock's own): a kazoo `Lock` made without
/// `extra_lock_patterns=["-lock-"]` sees only kazoo's names and a stock Curator `InterProcessMutex` only Curator's,
/// so either may hold beside a holder of the other. zklock sees both; the layout cannot tell how a kazoo process
/// was made, so it is said whenever the names are mixed (docs/library.md, "Sharing a path with Curator and kazoo").
pub(crate) fn mixed_formats(participants: &[Participant]) -> Option<String> {
    let kazoo = participants
        .iter()
        .filter(|p| matches!(p.kind, NodeKind::KazooLock | NodeKind::KazooRead))
        .count();
    let curator = participants
        .iter()
        .filter(|p| matches!(p.kind, NodeKind::Lock | NodeKind::Read | NodeKind::Write))
        .count();
    (kazoo > 0 && curator > 0).then(|| {
        format!(
            "this queue mixes {kazoo} kazoo-format node(s) (__lock__) with {curator} Curator-format node(s) \
             (zklock's, Curator's): a kazoo Lock made without extra_lock_patterns=[\"-lock-\"] does not wait for \
             the Curator-format ones, nor a Curator InterProcessMutex for the kazoo-format ones — two holders may run \
             at once unless every kazoo contender was made with those patterns and no Curator one is here"
        )
    })
}

/// A positive decimal number, as zklock and kazoo record a semaphore's leases.
fn decimal(data: &[u8]) -> Option<usize> {
    let n: usize = std::str::from_utf8(data).ok()?.trim().parse().ok()?;
    (n > 0).then_some(n)
}
