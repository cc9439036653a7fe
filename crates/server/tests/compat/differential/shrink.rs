//! Comparing two servers on a stream, and shrinking a failing stream to a short one that still fails.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::exec;
use super::ops::Op;

/// Where two traces first differ.
#[derive(Debug)]
pub struct Mismatch {
    /// Index of the first differing op.
    pub index: usize,
    /// The reference server's trace.
    pub reference: Vec<String>,
    /// The candidate's trace.
    pub candidate: Vec<String>,
}

/// A fresh stream root, distinct for every run in this process (both servers get the same name).
fn fresh_root() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("/diff{:05}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Runs `ops` on both servers at once and compares the traces.
pub async fn compare(reference: SocketAddr, candidate: SocketAddr, ops: &[Op]) -> Option<Mismatch> {
    let root = fresh_root();
    let (r, c) = tokio::join!(exec::run(reference, &root, ops), exec::run(candidate, &root, ops));
    let r = r.unwrap_or_else(|e| vec![format!("reference run failed: {e}")]);
    let c = c.unwrap_or_else(|e| vec![format!("candidate run failed: {e}")]);
    let index = r.iter().zip(&c).position(|(a, b)| a != b);
    let index = match index {
        Some(i) => i,
        None if r.len() == c.len() => return None,
        None => r.len().min(c.len()),
    };
    Some(Mismatch {
        index,
        reference: r,
        candidate: c,
    })
}

/// Delta debugging, bounded in attempts and time: cut the stream after its first mismatch, then drop
/// chunks (halves, quarters, ... single ops) as long as some mismatch remains.
pub async fn shrink(reference: SocketAddr, candidate: SocketAddr, ops: &[Op], first: &Mismatch) -> Vec<Op> {
    let mut ops: Vec<Op> = ops[..=first.index.min(ops.len() - 1)].to_vec();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut attempts = 0;
    let mut chunk = (ops.len() / 2).max(1);
    loop {
        let mut start = 0;
        let mut removed_any = false;
        while start < ops.len() && attempts < 400 && Instant::now() < deadline {
            let end = (start + chunk).min(ops.len());
            let mut candidate_ops = ops.clone();
            candidate_ops.drain(start..end);
            attempts += 1;
            if !candidate_ops.is_empty() {
                if let Some(m) = compare(reference, candidate, &candidate_ops).await {
                    // Keep only what leads up to the (possibly earlier) first mismatch.
                    candidate_ops.truncate(m.index + 1);
                    ops = candidate_ops;
                    removed_any = true;
                    continue;
                }
            }
            start = end;
        }
        if attempts >= 400 || Instant::now() >= deadline {
            break;
        }
        if chunk == 1 && !removed_any {
            break;
        }
        if !removed_any || chunk > 1 {
            chunk = (chunk / 2).max(1);
        }
    }
    ops
}
