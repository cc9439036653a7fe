//! A read-only look at a recipe directory: which recipe uses it, and who takes part, in order — what
//! `zklock status` shows, without anybody outside the library knowing the recipes' node layouts.

mod coordination;
mod counters;
mod locks;
mod queues;
pub(crate) mod view;

use crate::base::error::Result;
use crate::base::idioms::IfExists;
use crate::inspect::view::{Inspection, Recipe};
use crate::session::Session;

/// Looks at the recipe directory `path` on `session` (a [`Session`] or a `&Client`) without changing anything:
/// which recipe uses it and who takes part, in order, with each participant's session and data (like Curator's
/// `getParticipantNodes()` or kazoo's `contenders()`, for every recipe). `None` if the directory does not exist.
///
/// It is a snapshot: participants come and go while it looks, and one that left between the listing and the read
/// of its node is not shown. It needs `READ` on the directory only: a participant whose node's ACL keeps its data
/// from our session is shown all the same, with [`data_readable`](crate::Participant::data_readable) `false`.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// if let Some(found) = zklock::inspect(&client, "/locks/orders").await? {
///     for p in found.participants.iter().filter(|p| p.role == zklock::Role::Holder) {
///         println!("held by session 0x{:x}: {}", p.session_id, String::from_utf8_lossy(&p.data));
///     }
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidPath`](crate::Error::InvalidPath) for an invalid path;
/// [`Error::SessionExpired`](crate::Error::SessionExpired) or [`Error::Closed`](crate::Error::Closed) when the
/// session has ended; [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the
/// [`RetryPolicy`](crate::RetryPolicy) caps attempts.
pub async fn inspect(session: impl Into<Session>, path: &str) -> Result<Option<Inspection>> {
    let session = session.into();
    let path = crate::base::path::validate(path)?;
    let (client, retry) = (session.client(), session.retry());
    let Some(children) = retry
        .run_at("getChildren", &path, || client.list_children(&path))
        .await
        .if_exists()?
    else {
        return Ok(None);
    };
    let mut items_by_priority = Vec::new();
    let (recipe, participants) = if let Some(found) = locks::semaphore(&session, &path, &children).await? {
        found
    } else if let Some((recipe, priorities)) = queues::queue(&session, &path, &children).await? {
        items_by_priority = priorities;
        (recipe, Vec::new())
    } else if let Some(found) = locks::contenders(&session, &path, children.clone()).await? {
        found
    } else if let Some(found) = coordination::group(&session, &path, &children).await? {
        found
    } else if let Some(found) = coordination::two_phase_commit(&session, &path, &children).await? {
        found
    } else if let Some(found) = locks::kazoo_semaphore(&session, &path, &children).await? {
        found
    } else if let Some(found) = coordination::double_barrier(&session, &path, &children).await? {
        found
    } else if let Some(recipe) = counters::counter(&session, &path, &children).await? {
        (recipe, Vec::new())
    } else if let Some(found) = coordination::service(&session, &path, &children).await? {
        found
    } else if children.is_empty() {
        (Recipe::Empty, Vec::new())
    } else {
        (
            Recipe::Unrecognised {
                children: children.len(),
            },
            Vec::new(),
        )
    };
    let warnings = locks::mixed_formats(&participants).into_iter().collect();
    Ok(Some(Inspection {
        path,
        recipe,
        participants,
        items_by_priority,
        warnings,
    }))
}
