//! Runs a stream against one server and records a normalised trace: one line per op with the reply (error
//! code, decoded body, zxid) and every notification each session received because of it. A connection event
//! (`Op::Detach`, `Op::Reattach`) is carried out as a client losing its connection and reconnecting would:
//! the re-attach's line has its authentications' and setWatches2's replies.
//!
//! Normalisation keeps what must match and drops what may not: zxids become offsets from the zxid the
//! stream started at (so "every write consumes one zxid" is checked), session ids become slot labels, times
//! become `ctime = mtime` or not, children are sorted. Everything else is compared as sent.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;

use zklock_codec::{DecodeError, Reader};

use super::gen::SLOTS;
use super::ops::{auth_body, Op, Since, WatchLists, USERS};
use crate::wire::{connect_request, request_frame, Conn, Reply, XID_AUTH, XID_NOTIFICATION, XID_PING};

/// Session timeout asked for: the maximum of a default tickTime, so no session expires during a stream.
const SESSION_TIMEOUT_MS: i32 = 40_000;

struct Slot {
    conn: Option<Conn>,
    /// The session's connection was dropped on purpose (`Op::Detach`): the session lives on, unattached.
    detached: bool,
    session_id: i64,
    password: Vec<u8>,
    /// The zxid of the last reply to a request (Java's `lastZxid`): a re-attach's relative zxid.
    last_zxid: i64,
    /// The users the session authenticated as, in order: a client's auth info, which a re-attach may replay.
    users: Vec<usize>,
    events: Vec<String>,
}

/// One stream's execution against one server.
pub struct Run {
    addr: SocketAddr,
    root: String,
    slots: Vec<Slot>,
    base: i64,
    labels: HashMap<i64, String>,
    generation: usize,
    next_xid: i32,
}

/// Runs `ops` under a fresh `root` on the server at `addr` and returns the trace (one line per op).
pub async fn run(addr: SocketAddr, root: &str, ops: &[Op]) -> io::Result<Vec<String>> {
    let mut run = Run {
        addr,
        root: root.to_string(),
        slots: Vec::new(),
        base: 0,
        labels: HashMap::new(),
        generation: 0,
        next_xid: 1,
    };
    for i in 0..SLOTS {
        let slot = run.open(i).await?;
        run.slots.push(slot);
    }
    // The root, then a read whose reply zxid is the origin every later zxid is measured from.
    let mut create = Vec::new();
    zklock_codec::jute::put_str(&mut create, root);
    zklock_codec::jute::put_buffer(&mut create, Some(b"root"));
    zklock_codec::jute::put_i32(&mut create, 1);
    zklock_codec::jute::put_i32(&mut create, 31);
    zklock_codec::jute::put_str(&mut create, "world");
    zklock_codec::jute::put_str(&mut create, "anyone");
    zklock_codec::jute::put_i32(&mut create, 0);
    let created = run.call(0, 1, &create).await?;
    if created.as_ref().map(|r| r.header.err) != Some(0) {
        return Err(io::Error::other(format!(
            "creating the stream root {root} failed: {created:?}"
        )));
    }
    let mut exists = Vec::new();
    zklock_codec::jute::put_str(&mut exists, "/");
    zklock_codec::jute::put_bool(&mut exists, false);
    let origin = run
        .call(0, 3, &exists)
        .await?
        .ok_or_else(|| io::Error::other("no reply"))?;
    run.base = origin.header.zxid;
    run.barrier().await?;
    let mut trace = Vec::with_capacity(ops.len() + 1);
    for op in ops {
        let line = run.step(op).await?;
        trace.push(line);
    }
    for i in 0..SLOTS {
        run.close_slot(i).await?;
    }
    // Debugging aid: ZKLOCK_DIFF_DUMP=<prefix> appends every trace to <prefix>.<port>.
    if let Ok(prefix) = std::env::var("ZKLOCK_DIFF_DUMP") {
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(format!("{prefix}.{}", addr.port()))?;
        for (op, line) in ops.iter().zip(&trace) {
            writeln!(file, "{op:?}\n    => {line}")?;
        }
    }
    Ok(trace)
}

impl Run {
    async fn open(&mut self, i: usize) -> io::Result<Slot> {
        let mut conn = Conn::connect(self.addr).await?;
        let resp = conn
            .handshake(&connect_request(0, SESSION_TIMEOUT_MS, 0, &[0; 16]))
            .await?
            .ok_or_else(|| io::Error::other("server closed the connection instead of a ConnectResponse"))?;
        self.labels
            .insert(resp.session_id, format!("S{i}.{}", self.generation));
        self.generation += 1;
        Ok(Slot {
            conn: Some(conn),
            detached: false,
            session_id: resp.session_id,
            password: resp.passwd,
            last_zxid: 0,
            users: Vec::new(),
            events: Vec::new(),
        })
    }

    /// Sends a request on slot `i` and reads up to its reply; notifications before it go to the slot's
    /// events. `None`: the server closed the connection first.
    async fn call(&mut self, i: usize, opcode: i32, body: &[u8]) -> io::Result<Option<Reply>> {
        let xid = match opcode {
            100 => XID_AUTH,
            11 => XID_PING,
            101 | 105 => zklock_codec::xid::SET_WATCHES,
            _ => {
                self.next_xid += 1;
                self.next_xid
            }
        };
        let slot = &mut self.slots[i];
        let Some(conn) = slot.conn.as_mut() else {
            return Ok(None);
        };
        conn.send(xid, opcode, body).await?;
        loop {
            let Some(reply) = conn.read_reply().await? else {
                slot.conn = None;
                return Ok(None);
            };
            if reply.header.xid == XID_NOTIFICATION {
                slot.events.push(event_text(&reply, &self.root));
            } else if reply.header.xid == xid {
                if xid > 0 && reply.header.zxid > 0 {
                    slot.last_zxid = reply.header.zxid;
                }
                return Ok(Some(reply));
            } else {
                return Ok(Some(Reply {
                    body: format!("unexpected xid {} before reply {xid}", reply.header.xid).into_bytes(),
                    ..reply
                }));
            }
        }
    }

    /// Pings every live connection, so every notification queued before now has arrived.
    async fn barrier(&mut self) -> io::Result<()> {
        for i in 0..SLOTS {
            if self.slots[i].conn.is_some() && self.call(i, 11, &[]).await?.is_none() {
                self.slots[i].events.push("connection closed".into());
            }
        }
        Ok(())
    }

    async fn step(&mut self, op: &Op) -> io::Result<String> {
        let slot = op.slot();
        let closing = matches!(op, Op::Close { .. });
        let (mut line, at_reply) = match op {
            Op::Detach { s } => (self.detach(*s), None),
            Op::Reattach {
                s,
                since,
                reauth,
                watches,
            } => self.reattach(*s, *since, *reauth, watches).await?,
            _ if self.slots[slot].detached => ("not sent: the slot is detached".to_string(), None),
            _ => self.request(op).await?,
        };
        self.barrier().await?;
        // Notifications caused by its own request reach a session before the reply: mark where the reply
        // came, so an event arriving after it shows up in the trace.
        if let Some(at) = at_reply.filter(|at| self.slots[slot].events.len() > *at) {
            self.slots[slot].events.insert(at, "<reply>".into());
        }
        for (i, s) in self.slots.iter_mut().enumerate() {
            if closing {
                // A closing session's ephemerals are deleted in hash-set order in ZooKeeper: the order of
                // their notifications is unspecified, the set is not.
                s.events.sort();
            }
            if !s.events.is_empty() {
                line.push_str(&format!(" | S{i} events: {}", s.events.join(", ")));
                s.events.clear();
            }
        }
        Ok(line)
    }

    /// Sends the request of `op` on its slot: the trace line, and where in the slot's events the reply came
    /// (`None` after a close, whose notifications are unordered).
    async fn request(&mut self, op: &Op) -> io::Result<(String, Option<usize>)> {
        let slot = op.slot();
        let Some((opcode, body)) = op.encode(&self.root) else {
            return Ok(("not a request".to_string(), None));
        };
        let before = self.slots[slot].events.len();
        let reply = self.call(slot, opcode, &body).await?;
        if opcode == -11 && super::known::ignore_own_close_events() {
            self.slots[slot].events.truncate(before);
        }
        if let (Op::Auth { user, .. }, Some(r)) = (op, &reply) {
            if r.header.err == 0 && !self.slots[slot].users.contains(user) {
                self.slots[slot].users.push(*user);
            }
        }
        let mut line = match reply {
            None => "connection closed before the reply".to_string(),
            Some(reply) => self.reply_text(opcode, &reply),
        };
        let at_reply = self.slots[slot].events.len();
        if opcode == -11 || self.slots[slot].conn.is_none() {
            line.push_str(&self.reopen(slot, opcode == -11).await?);
        }
        Ok((line, (opcode != -11).then_some(at_reply)))
    }

    /// `Op::Detach`: drops slot `i`'s connection, keeping its session (and the users to authenticate as
    /// again). Nothing is pending on it (every step ends with a barrier), and what the server sends to the
    /// dead connection meanwhile is lost, as a real client's would be.
    fn detach(&mut self, i: usize) -> String {
        let slot = &mut self.slots[i];
        if slot.detached {
            return "already detached".into();
        }
        slot.conn = None;
        slot.detached = true;
        "detached".into()
    }

    /// `Op::Reattach`: re-attaches slot `i`'s session on a new connection, as a client reconnecting does:
    /// authentications first if `reauth` (without, the connection has no digest identity, though a later
    /// re-attach may still replay them), then setWatches2 (xid −8) with `watches` relative to `since`.
    /// The missed-change notifications arrive before the setWatches2 reply.
    async fn reattach(
        &mut self,
        i: usize,
        since: Since,
        reauth: bool,
        watches: &WatchLists,
    ) -> io::Result<(String, Option<usize>)> {
        if !self.attach_again(i).await? {
            let mut line = "reattach refused".to_string();
            line.push_str(&self.reopen(i, false).await?);
            return Ok((line, None));
        }
        let mut line = "reattached".to_string();
        if reauth {
            line.push_str(&self.replay_auth(i).await?);
        }
        let relative = match since {
            Since::LastSeen => self.slots[i].last_zxid,
            Since::Origin => self.base,
        };
        let reply = self.call(i, 105, &watches.encode(&self.root, relative)).await?;
        line.push_str(&match reply {
            None => "; connection closed before the setWatches2 reply".to_string(),
            Some(r) => format!("; setWatches2 {}", self.reply_text(105, &r)),
        });
        let at_reply = self.slots[i].events.len();
        if self.slots[i].conn.is_none() {
            line.push_str(&self.reopen(i, false).await?);
        }
        Ok((line, Some(at_reply)))
    }

    /// Connects slot `i` to its session again (dropping its connection, if any): false if the server
    /// refused the session.
    async fn attach_again(&mut self, i: usize) -> io::Result<bool> {
        let slot = &mut self.slots[i];
        slot.conn = None;
        slot.detached = false;
        let mut conn = Conn::connect(self.addr).await?;
        let request = connect_request(
            slot.last_zxid,
            SESSION_TIMEOUT_MS,
            slot.session_id,
            &slot.password,
        );
        let resp = conn.handshake(&request).await?;
        if resp.is_none_or(|r| r.time_out <= 0) {
            return Ok(false);
        }
        slot.conn = Some(conn);
        Ok(true)
    }

    /// Authenticates slot `i`'s new connection as every user its session did, in order, as a client replays
    /// its auth info on a reconnect.
    async fn replay_auth(&mut self, i: usize) -> io::Result<String> {
        let mut text = String::new();
        for user in self.slots[i].users.clone() {
            let reply = self.call(i, 100, &auth_body(user)).await?;
            let outcome = reply.map_or("connection closed".into(), |r| format!("err {}", r.header.err));
            text.push_str(&format!("; auth {}: {outcome}", USERS[user]));
        }
        Ok(text)
    }

    /// After a close (asked for, or the server dropped the connection): make sure the old session is gone
    /// (an orphaned session would expire later, at a time the two servers would not agree on), then give
    /// the slot a new session.
    async fn reopen(&mut self, i: usize, asked: bool) -> io::Result<String> {
        let mut text = String::new();
        if asked {
            if let Some(mut conn) = self.slots[i].conn.take() {
                let (after, closed) = conn.drain_until_closed().await;
                for reply in &after {
                    text.push_str(&format!(
                        "; then xid {} {}",
                        reply.header.xid,
                        event_text(reply, &self.root)
                    ));
                }
                text.push_str(if closed {
                    "; server closed"
                } else {
                    "; server kept the connection"
                });
            }
        } else {
            self.slots[i].conn = None;
            let gone = self.kill_session(i).await?;
            text.push_str(&format!("; old session closed: {gone}"));
        }
        let slot = self.open(i).await?;
        let events = std::mem::take(&mut self.slots[i].events);
        self.slots[i] = Slot { events, ..slot };
        Ok(text)
    }

    /// Re-attaches slot `i`'s session on a new connection and closes it in the same write.
    async fn kill_session(&mut self, i: usize) -> io::Result<String> {
        let mut conn = Conn::connect(self.addr).await?;
        let mut bytes = Vec::new();
        let connect = connect_request(
            0,
            SESSION_TIMEOUT_MS,
            self.slots[i].session_id,
            &self.slots[i].password,
        );
        zklock_codec::jute::put_i32(&mut bytes, connect.len() as i32);
        bytes.extend_from_slice(&connect);
        bytes.extend_from_slice(&request_frame(1, -11, &[]));
        conn.send_raw(&bytes).await?;
        let Some(resp) = conn.read_frame().await? else {
            return Ok("refused".into());
        };
        let timeout = resp
            .get(4..8)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        if timeout == Some(0) {
            return Ok("already expired".into());
        }
        loop {
            match conn.read_reply().await? {
                None => return Ok("connection lost".into()),
                Some(r) if r.header.xid == 1 => return Ok(format!("err {}", r.header.err)),
                Some(_) => {}
            }
        }
    }

    /// Ends slot `i`'s session: closeSession on its connection, or, detached, on a new one.
    async fn close_slot(&mut self, i: usize) -> io::Result<()> {
        if self.slots[i].detached {
            self.kill_session(i).await?;
        } else if self.slots[i].conn.is_some() {
            self.call(i, -11, &[]).await?;
        }
        Ok(())
    }

    fn zxid(&self, z: i64) -> String {
        match z {
            0 => "0".into(),
            z if z < 0 => z.to_string(),
            z if z < self.base => "pre".into(),
            z => format!("+{}", z - self.base),
        }
    }

    fn path(&self, p: &str) -> String {
        match p.strip_prefix(&self.root) {
            Some(rest) => format!("R{rest}"),
            None => p.to_string(),
        }
    }

    fn owner(&self, o: i64) -> String {
        match o {
            0 => "0".into(),
            o => self.labels.get(&o).cloned().unwrap_or_else(|| format!("{o:#x}")),
        }
    }

    fn reply_text(&self, opcode: i32, reply: &Reply) -> String {
        let h = &reply.header;
        let mut text = format!("err {} zxid {}", h.err, self.zxid(h.zxid));
        if !reply.body.is_empty() {
            let mut r = Reader::new(&reply.body);
            let body = if h.err == 0 {
                self.body(opcode, &mut r)
            } else {
                Err(DecodeError::InvalidValue {
                    what: "body after an error",
                    value: h.err,
                })
            };
            match body {
                Ok(b) if r.remaining() == 0 => text.push_str(&format!(" {b}")),
                Ok(b) => text.push_str(&format!(" {b} +{} trailing bytes", r.remaining())),
                Err(e) => text.push_str(&format!(
                    " body of {} bytes ({e}): {:?}",
                    reply.body.len(),
                    reply.body
                )),
            }
        }
        text
    }

    fn stat(&self, r: &mut Reader<'_>) -> Result<String, DecodeError> {
        let czxid = r.read_i64()?;
        let mzxid = r.read_i64()?;
        let ctime = r.read_i64()?;
        let mtime = r.read_i64()?;
        let version = r.read_i32()?;
        let cversion = r.read_i32()?;
        let aversion = r.read_i32()?;
        let owner = r.read_i64()?;
        let len = r.read_i32()?;
        let children = r.read_i32()?;
        let pzxid = r.read_i64()?;
        let times = match (ctime, mtime) {
            (0, 0) => "t0",
            // A create and a setData may share a millisecond: only the order of the two is compared.
            (c, m) if c <= m => "t",
            _ => "t>",
        };
        Ok(format!(
            "stat(c{} m{} p{} v{version} cv{cversion} av{aversion} owner {} len {len} n{children} {times})",
            self.zxid(czxid),
            self.zxid(mzxid),
            self.zxid(pzxid),
            self.owner(owner)
        ))
    }

    fn strings(&self, r: &mut Reader<'_>, sort: bool) -> Result<String, DecodeError> {
        let mut v: Vec<String> = match r.read_vec::<String>()? {
            None => return Ok("null".into()),
            Some(v) => v.iter().map(|s| self.path(s)).collect(),
        };
        if sort {
            v.sort();
        }
        Ok(format!("{v:?}"))
    }

    fn data(r: &mut Reader<'_>) -> Result<String, DecodeError> {
        Ok(match r.read_buffer()? {
            None => "null".into(),
            Some(d) => format!("{:?}", String::from_utf8_lossy(&d)),
        })
    }

    fn body(&self, opcode: i32, r: &mut Reader<'_>) -> Result<String, DecodeError> {
        Ok(match opcode {
            1 | 9 => self.path(&r.read_string()?),
            15 | 19 | 21 => format!("{} {}", self.path(&r.read_string()?), self.stat(r)?),
            3 | 5 | 7 => self.stat(r)?,
            4 => format!("{} {}", Self::data(r)?, self.stat(r)?),
            6 => {
                let n = r.read_i32()?;
                let mut acl = Vec::new();
                for _ in 0..n.clamp(0, 100) {
                    acl.push(format!(
                        "{} {}:{}",
                        r.read_i32()?,
                        r.read_string()?,
                        r.read_string()?
                    ));
                }
                format!("{acl:?} {}", self.stat(r)?)
            }
            8 => self.strings(r, true)?,
            12 => format!("{} {}", self.strings(r, true)?, self.stat(r)?),
            103 => self.strings(r, true)?,
            104 | 106 => format!("int {}", r.read_i32()?),
            107 => {
                let n = r.read_i32()?;
                let mut who = Vec::new();
                for _ in 0..n.clamp(0, 100) {
                    who.push(format!("{}:{}", r.read_string()?, r.read_string()?));
                }
                who.sort();
                format!("{who:?}")
            }
            14 | 22 => self.multi(r)?,
            _ => format!("{} unexpected body bytes", r.remaining()),
        })
    }

    fn multi(&self, r: &mut Reader<'_>) -> Result<String, DecodeError> {
        let mut results = Vec::new();
        for _ in 0..100 {
            let op = r.read_i32()?;
            let done = r.read_bool()?;
            let err = r.read_i32()?;
            if done {
                return Ok(format!("[{}] end({op},{err})", results.join("; ")));
            }
            let body = match op {
                1 => self.path(&r.read_string()?),
                15 | 19 | 21 => format!("{} {}", self.path(&r.read_string()?), self.stat(r)?),
                2 | 13 => String::new(),
                5 => self.stat(r)?,
                4 => format!("{} {}", Self::data(r)?, self.stat(r)?),
                8 => self.strings(r, true)?,
                -1 => format!("code {}", r.read_i32()?),
                _ => "?".into(),
            };
            results.push(format!("op {op} err {err} {body}"));
        }
        Ok(format!("[{}] (no end marker)", results.join("; ")))
    }
}

fn event_text(reply: &Reply, root: &str) -> String {
    let mut r = Reader::new(&reply.body);
    let parsed = (|| -> Result<(i32, i32, String), DecodeError> {
        Ok((r.read_i32()?, r.read_i32()?, r.read_string()?))
    })();
    match parsed {
        Ok((kind, state, path)) => {
            let path = match path.strip_prefix(root) {
                Some(rest) => format!("R{rest}"),
                None => path,
            };
            format!("({kind} {state} {path} z{})", reply.header.zxid)
        }
        Err(e) => format!("(undecodable notification {e})"),
    }
}
