//! A claimed queue item ([`Claimed`]): still in the queue but skipped by every other `take_safe` consumer while our
//! claim — an ephemeral node under `<queue>/claims` — lives; and the claim create that may still be in flight.

use zookeeper_client as zk;

use crate::base::error::{At as _, Error, Result};
use crate::base::idioms::IfExists;
use crate::node::held::Held;
use crate::session::cas::{Committed, Write};
use crate::session::Session;

/// A claim create that may be in flight. Dropped while armed, it removes the claim node if our session created it:
/// the check is sent at once, so it is processed after the create; a claim owned by our session can only
/// disappear by our own delete, so deleting it after the check is safe.
pub(crate) struct PendingClaim {
    pub(crate) session: Session,
    pub(crate) claim: String,
    /// The data our create wrote: tells our claim from a sibling consumer's on the same session.
    pub(crate) token: Vec<u8>,
    pub(crate) armed: bool,
}

impl Drop for PendingClaim {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // the claim, if any, goes with the session
        };
        // Sent now, so that it sees our create if that was sent (requests of a session are processed in order).
        let check = self.session.client().get_data(&self.claim);
        let (session, claim, token) = (
            self.session.clone(),
            self.claim.clone(),
            std::mem::take(&mut self.token),
        );
        runtime.spawn(async move {
            let found = match check.await.at("getData", &claim).if_exists() {
                Ok(found) => found,
                Err(_) => session.get(&claim).await.ok().flatten(),
            };
            if found.is_some_and(|(data, _)| data == token) {
                tracing::debug!(%claim, "removing the claim of a cancelled take");
                if let Err(err) = session.delete_if_exists(&claim, None).await {
                    tracing::debug!(%claim, %err, "removing the claim of a cancelled take failed");
                }
            }
        });
    }
}

/// An item claimed by [`Queue::take_safe`](crate::Queue::take_safe): still in the queue, but skipped by every other `take_safe` consumer
/// for as long as our claim (an ephemeral node) lives.
///
/// Finish with [`complete`](Claimed::complete) once the item is processed. Dropping it, or
/// [`abandon`](Claimed::abandon), puts the item back; so does the end of our session, which
/// [`lost`](Claimed::lost) reports at once: from then on another consumer may be processing the same item.
#[derive(Debug)]
pub struct Claimed {
    pub(crate) session: Session,
    /// Our claim, watched from the moment the item is ours; dropping it removes the claim.
    pub(crate) held: Held,
    pub(crate) item: String,
    pub(crate) name: String,
    pub(crate) data: Vec<u8>,
}

impl Claimed {
    /// The item's data.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The item's node name (`qn-…<sequence>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    crate::node::held::lost_methods! {
        held:
        /// Completes when our claim stops protecting the item: session expiry, deletion of the claim by somebody
        /// else, or (per the queue's [`LostPolicy`](crate::LostPolicy)) a long disconnection. Cheap to call many
        /// times.
        pub fn lost;
        /// Whether the claim has been lost already.
        pub fn is_lost;
        /// Why the claim was lost, if it was.
        pub fn lost_reason;
    }

    crate::node::held::suspension_methods!(held);

    /// Removes the item and our claim in one transaction and returns the data.
    ///
    /// # Errors
    /// [`Error::SessionExpired`] if our session ended (the claim is gone: another consumer may take the item);
    /// [`Error::NodeDeleted`] if the item or our claim was deleted by somebody else meanwhile (a `take` consumer
    /// ignoring claims, or an operator).
    pub async fn complete(self) -> Result<Vec<u8>> {
        // Deleting the claim is the point now, not a loss. Until the transaction is confirmed the claim stays ours
        // to remove: if this future is dropped or fails half-way, the item goes back.
        let claim = self.held.into_node();
        let claim_path = claim.path();
        // Nobody but the claim holder deletes a claimed item: after a lost reply, the item and our claim both gone
        // means our transaction went through.
        let writes = [Write::Delete(&self.item, None), Write::Delete(&claim_path, None)];
        match self.session.commit_once(&writes, true).await? {
            Committed::Done { .. } => {
                claim.deleted();
                Ok(self.data)
            }
            Committed::Refused {
                index,
                error: zk::Error::NoNode,
            } => Err(Error::NodeDeleted {
                path: writes[index].path().to_owned(),
            }),
            Committed::Refused { index, error } => Err(Committed::refused(index, error, &writes)),
        }
    }

    /// Gives the item back to the queue (removes our claim) and waits for ZooKeeper to confirm.
    pub async fn abandon(self) -> Result<()> {
        // On an error the claim's `Drop` keeps trying in the background.
        self.held.into_node().delete().await
    }
}
