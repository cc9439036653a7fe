//! What the protected resource saw, and what the commands of `zklock run` logged: the only inputs of the checker.

use std::fmt;
use std::str::FromStr;

/// Who may hold the resource together: one holder (`Exclusive`: a mutex, a write lock, a leader) or several
/// (`Shared`: read locks, semaphore leases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// One holder at a time.
    Exclusive,
    /// Several holders at a time (readers; semaphore leases).
    Shared,
}

/// One operation on the fenced register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Read the counter.
    Read,
    /// Write the counter (the value read plus one).
    Write,
    /// Start using the resource without changing the counter (a reader or a lease holder).
    Enter,
    /// Done using the resource.
    Leave,
    /// Queue: an item was put and the put acknowledged (its id in `token`; a priority queue's: its priority in
    /// `value`).
    Put,
    /// Queue: an item was taken and is being processed (a priority queue's: its priority in `value`).
    Take,
    /// Queue: an item's processing was completed (the item removed from the queue).
    Done,
    /// Double barrier: a participant calls `enter` (round in `token`, participant's launch in `value`).
    Arrive,
    /// Double barrier: `enter` returned: the participant is in.
    Pass,
    /// Double barrier: `enter` failed or timed out: the participant gave up the round.
    Abandon,
    /// Double barrier: `leave` returned.
    Left,
    /// Counter: an increment is about to be sent (its id in `token`).
    Add,
    /// Counter: the increment was acknowledged (`value`: the value it made).
    Added,
    /// Counter: the increment failed or was given up, its outcome unknown.
    Unsure,
    /// Counter: the value read once every contender ended (`value`).
    Final,
    /// Priority queue: a consumer starts looking for an item to take.
    Seek,
    /// Priority queue: the look ended without an item (`value` 0: none was free; 1: it failed, and a claim it
    /// made may have lived until its session ended).
    Miss,
    /// Group: our join was acknowledged (our member id in `token`).
    Join,
    /// Group: our leave was acknowledged (our member id in `token`).
    Part,
    /// Group: a look at the group starts (our member id in `token`).
    Look,
    /// Group: a member (`token`) the look of member `value` showed.
    Seen,
    /// Group: a member (`token`; 0: the header) of the final view of member `value`.
    View,
    /// Two-phase commit: the coordinator opens transaction `token` with participant `value` (one per participant).
    Begin,
    /// Two-phase commit: a participant's vote in transaction `token` (`value` 1 commit, 0 abort), before it is sent.
    Vote,
    /// Two-phase commit: the outcome of transaction `token` as a party learnt it (`value` 1 commit, 0 abort).
    Outcome,
}

/// One operation the register received, accepted or rejected, in the order it handled them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// Position in the register's order.
    pub seq: u64,
    /// `CLOCK_MONOTONIC` nanoseconds when the register handled it.
    pub at_ns: u64,
    /// The contender (slot) that sent it.
    pub client: u32,
    /// The fencing token it carried.
    pub token: i64,
    /// Exclusive or shared use.
    pub kind: Kind,
    /// What it asked.
    pub action: Action,
    /// The value read or written (0 for enter/leave).
    pub value: i64,
    /// Whether the fence let it through.
    pub accepted: bool,
    /// Which of the register's resources it used: 0 for the one resource of most workloads; the `partitioner`'s
    /// items are 1, 2, … (each its own fence and counter, judged on its own).
    pub key: u32,
}

impl Op {
    /// The critical section an operation belongs to: one contender holding one token.
    pub fn section(&self) -> (u32, i64) {
        (self.client, self.token)
    }
}

/// `Display` and `FromStr` for a fieldless enum from one table of `Variant => "name"` rows: the names a history
/// file uses, written and read back the same way.
macro_rules! named {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal,)* }) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self {
                    $($ty::$variant => $name,)*
                })
            }
        }

        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<$ty, String> {
                match s {
                    $($name => Ok($ty::$variant),)*
                    other => Err(format!(concat!("unknown ", $what, " {:?}"), other)),
                }
            }
        }
    };
}

named!(Kind, "kind", {
    Exclusive => "x",
    Shared => "s",
});

named!(Action, "action", {
    Read => "read",
    Write => "write",
    Enter => "enter",
    Leave => "leave",
    Put => "put",
    Take => "take",
    Done => "done",
    Arrive => "arrive",
    Pass => "pass",
    Abandon => "abandon",
    Left => "left",
    Add => "add",
    Added => "added",
    Unsure => "unsure",
    Final => "final",
    Seek => "seek",
    Miss => "miss",
    Join => "join",
    Part => "part",
    Look => "look",
    Seen => "seen",
    View => "view",
    Begin => "begin",
    Vote => "vote",
    Outcome => "outcome",
});

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {} {} {}",
            self.seq,
            self.at_ns,
            self.client,
            self.token,
            self.kind,
            self.action,
            self.value,
            if self.accepted { "ok" } else { "rejected" },
            self.key
        )
    }
}

impl FromStr for Op {
    type Err = String;
    fn from_str(line: &str) -> Result<Op, String> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 9 {
            return Err(format!("a register record has 9 fields: {line:?}"));
        }
        let num = |i: usize| {
            f[i].parse::<i64>()
                .map_err(|e| format!("field {i} of {line:?}: {e}"))
        };
        Ok(Op {
            seq: num(0)? as u64,
            at_ns: num(1)? as u64,
            client: num(2)? as u32,
            token: num(3)?,
            kind: f[4].parse()?,
            action: f[5].parse()?,
            value: num(6)?,
            accepted: match f[7] {
                "ok" => true,
                "rejected" => false,
                other => return Err(format!("unknown verdict {other:?}")),
            },
            key: num(8)? as u32,
        })
    }
}

/// What one command of `zklock run` logged about itself: when it began, and the last moment it was seen acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// Which log it came from (for messages).
    pub name: String,
    /// Its fencing token (`ZKLOCK_FENCING_TOKEN`).
    pub token: i64,
    /// `CLOCK_MONOTONIC` ns of its first line.
    pub begin_ns: u64,
    /// `CLOCK_MONOTONIC` ns of its last line (its end, or its last tick before it was killed).
    pub last_ns: u64,
    /// Whether it reached its end line (it was not killed).
    pub finished: bool,
}

/// Parses a command's log: `begin <token> <ns>`, `tick <ns>` lines, `end <ns>`. `None` if it never began.
pub fn parse_interval(name: &str, text: &str) -> Option<Interval> {
    let mut interval: Option<Interval> = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match (f.first().copied(), &mut interval) {
            (Some("begin"), None) if f.len() == 3 => {
                let (Ok(token), Ok(at)) = (f[1].parse(), f[2].parse()) else {
                    continue;
                };
                interval = Some(Interval {
                    name: name.to_owned(),
                    token,
                    begin_ns: at,
                    last_ns: at,
                    finished: false,
                });
            }
            (Some("tick" | "end"), Some(iv)) if f.len() == 2 => {
                if let Ok(at) = f[1].parse::<u64>() {
                    iv.last_ns = iv.last_ns.max(at);
                    iv.finished |= f[0] == "end";
                }
            }
            _ => {} // a torn last line of a killed command
        }
    }
    interval
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip() {
        let op = Op {
            seq: 7,
            at_ns: 123,
            client: 2,
            token: 4294967301,
            kind: Kind::Shared,
            action: Action::Enter,
            value: 0,
            accepted: false,
            key: 3,
        };
        assert_eq!(op.to_string().parse::<Op>(), Ok(op));
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for action in [Action::Read, Action::Take, Action::View, Action::Outcome] {
            assert_eq!(action.to_string().parse::<Action>(), Ok(action));
        }
        assert_eq!(Action::Unsure.to_string(), "unsure");
        assert_eq!("s".parse::<Kind>(), Ok(Kind::Shared));
        assert_eq!(
            "read ".parse::<Action>(),
            Err("unknown action \"read \"".to_string())
        );
        assert_eq!("X".parse::<Kind>(), Err("unknown kind \"X\"".to_string()));
    }

    #[test]
    fn intervals_tolerate_a_torn_last_line() {
        let iv = parse_interval("a", "begin 5 100\ntick 150\ntick 2").unwrap();
        assert_eq!(
            (iv.token, iv.begin_ns, iv.last_ns, iv.finished),
            (5, 100, 150, false)
        );
        let iv = parse_interval("a", "begin 5 100\ntick 150\nend 160\n").unwrap();
        assert!(iv.finished && iv.last_ns == 160);
        assert_eq!(parse_interval("a", ""), None);
    }
}
