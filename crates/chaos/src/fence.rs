//! The fencing rule of the protected resource: which tokens it still accepts.
//!
//! Every token is the czxid of a contender's node, so a holder that took over later always carries a larger token
//! than every holder before it. The resource remembers what it has seen and refuses anything older than a holder
//! that has already shown up — so a holder that was paused past its session's expiry, and resumes believing it
//! still holds the lock, is refused as soon as its successor has touched the resource.

use std::collections::BTreeSet;

use crate::history::Kind;

/// Which operations the resource accepts.
#[derive(Debug, Clone)]
pub enum Fence {
    /// Accepts everything: the negative control (`--no-fencing`).
    Off,
    /// At most `leases` holders at once (1: a mutex or a leader; N: a semaphore): a token is accepted while fewer
    /// than `leases` larger tokens have been seen.
    Leases {
        /// How many may hold at once.
        leases: usize,
        /// The largest `leases` distinct tokens seen.
        top: BTreeSet<i64>,
    },
    /// A read/write lock: a writer needs a token at least as large as every token seen; a reader one at least as
    /// large as every writer's.
    ReadWrite {
        /// The largest token seen.
        any: i64,
        /// The largest writer's token seen.
        writer: i64,
    },
}

impl Fence {
    /// A fence for `leases` holders at once.
    pub fn leases(leases: usize) -> Fence {
        Fence::Leases {
            leases: leases.max(1),
            top: BTreeSet::new(),
        }
    }

    /// A fence for a read/write lock.
    pub fn read_write() -> Fence {
        Fence::ReadWrite {
            any: i64::MIN,
            writer: i64::MIN,
        }
    }

    /// Whether an operation with `token` of `kind` passes; if it does, it is remembered.
    pub fn admit(&mut self, kind: Kind, token: i64) -> bool {
        match self {
            Fence::Off => true,
            Fence::Leases { leases, top } => {
                let larger = top.range(token.saturating_add(1)..).count();
                if larger >= *leases {
                    return false;
                }
                top.insert(token);
                while top.len() > *leases {
                    top.pop_first();
                }
                true
            }
            Fence::ReadWrite { any, writer } => {
                let ok = match kind {
                    Kind::Exclusive => token >= *any,
                    Kind::Shared => token >= *writer,
                };
                if ok {
                    *any = (*any).max(token);
                    if kind == Kind::Exclusive {
                        *writer = (*writer).max(token);
                    }
                }
                ok
            }
        }
    }

    /// Whether the fence refuses only holders that lost their turn (one lease; a read/write lock). With several
    /// leases it also refuses a holder that outlived newer ones — it remembers the newest tokens seen, not who
    /// still holds — and with none it refuses nobody.
    pub fn refuses_only_the_stale(&self) -> bool {
        match self {
            Fence::Off => false,
            Fence::Leases { leases, .. } => *leases == 1,
            Fence::ReadWrite { .. } => true,
        }
    }

    /// The smallest token still accepted for `kind`, for the rejection message.
    pub fn floor(&self, kind: Kind) -> i64 {
        match self {
            Fence::Off => i64::MIN,
            Fence::Leases { leases, top } => {
                if top.len() < *leases {
                    i64::MIN
                } else {
                    top.first().copied().unwrap_or(i64::MIN)
                }
            }
            Fence::ReadWrite { any, writer } => match kind {
                Kind::Exclusive => *any,
                Kind::Shared => *writer,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Kind::*;

    #[test]
    fn one_lease_is_a_high_water_mark() {
        let mut f = Fence::leases(1);
        assert!(f.admit(Exclusive, 5));
        assert!(f.admit(Exclusive, 5), "the same holder again");
        assert!(f.admit(Exclusive, 9));
        assert!(
            !f.admit(Exclusive, 5),
            "the old holder is fenced out once the new one showed up"
        );
        assert_eq!(f.floor(Exclusive), 9);
    }

    #[test]
    fn n_leases_admit_the_n_newest() {
        let mut f = Fence::leases(2);
        assert!(f.admit(Shared, 3));
        assert!(f.admit(Shared, 4));
        assert!(f.admit(Shared, 3), "two leases: 3 and 4 may hold together");
        assert!(f.admit(Shared, 7));
        assert!(!f.admit(Shared, 3), "4 and 7 are newer: 3's lease must be gone");
        assert!(f.admit(Shared, 4));
    }

    #[test]
    fn readers_share_and_writers_fence_everyone() {
        let mut f = Fence::read_write();
        assert!(f.admit(Shared, 10));
        assert!(f.admit(Shared, 11));
        assert!(f.admit(Shared, 10), "readers together");
        assert!(f.admit(Exclusive, 12));
        assert!(
            !f.admit(Shared, 11),
            "a reader older than a writer that showed up"
        );
        assert!(f.admit(Shared, 15));
        assert!(
            !f.admit(Exclusive, 12),
            "a writer older than a reader that showed up"
        );
    }

    #[test]
    fn only_exact_fences_refuse_only_the_stale() {
        assert!(Fence::leases(1).refuses_only_the_stale());
        assert!(Fence::read_write().refuses_only_the_stale());
        let mut f = Fence::leases(2);
        assert!(!f.refuses_only_the_stale());
        // 3 still holds when 4 leaves and 7 comes: two leases, two holders, yet 3 is refused.
        for token in [3, 4, 7] {
            assert!(f.admit(Shared, token));
        }
        assert!(!f.admit(Shared, 3));
        assert!(!Fence::Off.refuses_only_the_stale());
    }

    #[test]
    fn off_admits_everything() {
        let mut f = Fence::Off;
        assert!(f.admit(Exclusive, 9));
        assert!(f.admit(Exclusive, 1));
    }
}
