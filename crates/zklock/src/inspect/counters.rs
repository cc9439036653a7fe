//! What a counter node shows: its value and version, in Curator's `SharedCount` or `DistributedAtomicLong` bytes.

use zookeeper_client as zk;

use crate::base::error::{Error, Result};
use crate::base::idioms::IfExists;
use crate::inspect::view::Recipe;
use crate::recipes::counters::RECEIPT_PREFIX;
use crate::session::Session;

/// What [`inspect`](crate::inspect) shows of a node whose `children` are only receipts of ours (or none): a
/// counter, if it holds 4 bytes ([`Recipe::SharedCount`]) or 8 ([`Recipe::AtomicLong`]) that we may read.
pub(crate) async fn counter(session: &Session, path: &str, children: &[String]) -> Result<Option<Recipe>> {
    if !children.iter().all(|name| name.starts_with(RECEIPT_PREFIX)) {
        return Ok(None);
    }
    let read = session
        .retry()
        .run_at("getData", path, || session.client().get_data(path))
        .await;
    let Some((data, stat)) = (match read {
        Err(Error::ZooKeeper {
            source: zk::Error::NoAuth,
            ..
        }) => None,
        read => read.if_exists()?,
    }) else {
        return Ok(None);
    };
    Ok(match data.len() {
        4 => Some(Recipe::SharedCount {
            value: i32::from_be_bytes(data[..].try_into().expect("4 bytes")),
            version: stat.version,
        }),
        8 => Some(Recipe::AtomicLong {
            value: i64::from_be_bytes(data[..].try_into().expect("8 bytes")),
            version: stat.version,
        }),
        _ => None,
    })
}
