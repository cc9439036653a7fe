//! Curator's `DistributedPriorityQueue` layout, shared by [`crate::PriorityQueue`] and the queue machinery
//! (`recipes/queues/`): item names (`queue-<sign><8 hex priority><sequence>`) and the `ItemSerializer` envelope around an
//! item's data.

/// The prefix of every item node (Curator's `DistributedQueue` item name).
pub(crate) const ITEM_PREFIX: &str = "queue-";
/// The version word that opens Curator's envelope.
const ENVELOPE_VERSION: [u8; 4] = [0x00, 0x01, 0x00, 0x01];
/// The envelope's marker before a payload.
const ENVELOPE_ITEM: u8 = 0x01;
/// The envelope's end marker.
const ENVELOPE_END: u8 = 0x02;

/// `queue-<P><HHHHHHHH>`: Curator's name of an item of `priority`, before ZooKeeper's sequence.
pub(crate) fn item_prefix(priority: i32) -> String {
    let sign = if priority >= 0 { '1' } else { '0' };
    format!("{ITEM_PREFIX}{sign}{:08X}", priority as u32)
}

/// The priority and sequence of a priority queue item (`queue-<P><8 hex><10 digits>`); `None` for children that are
/// not items. The sign digit must agree with the priority's sign.
pub(crate) fn item_key(name: &str) -> Option<(i32, i64)> {
    let rest = name.strip_prefix(ITEM_PREFIX)?;
    if rest.len() != 19 || !rest.is_ascii() {
        return None;
    }
    let (sign, rest) = rest.split_at(1);
    let (hex, sequence) = rest.split_at(8);
    let priority = u32::from_str_radix(hex, 16).ok()? as i32;
    let negative = match sign {
        "0" => true,
        "1" => false,
        _ => return None,
    };
    if negative != (priority < 0) || !sequence.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((priority, sequence.parse().ok()?))
}

/// `data` in Curator's `ItemSerializer` envelope, as one payload.
pub(crate) fn envelope(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 10);
    out.extend_from_slice(&ENVELOPE_VERSION);
    out.push(ENVELOPE_ITEM);
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    out.push(ENVELOPE_END);
    out
}

/// The payload of an envelope holding exactly one; anything else (several payloads, or no envelope) as it is.
pub(crate) fn open_envelope(data: Vec<u8>) -> Vec<u8> {
    let Some(body) = data.strip_prefix(&ENVELOPE_VERSION[..]) else {
        return data;
    };
    let mut payloads = Vec::new();
    let mut at = 0;
    loop {
        match body.get(at) {
            Some(&ENVELOPE_END) => break,
            Some(&ENVELOPE_ITEM) => {
                let Some(len) = body.get(at + 1..at + 5) else {
                    return data;
                };
                let len = u32::from_be_bytes(len.try_into().expect("four bytes")) as usize;
                let Some(payload) = body.get(at + 5..(at + 5).saturating_add(len)) else {
                    return data;
                };
                payloads.push(payload);
                at += 5 + len;
            }
            _ => return data,
        }
    }
    match payloads[..] {
        [one] => one.to_vec(),
        _ => data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_curators() {
        // DistributedPriorityQueue.priorityToString: "%s%08X", "1" for priority >= 0, "0" below.
        assert_eq!(item_prefix(0), "queue-100000000");
        assert_eq!(item_prefix(10), "queue-10000000A");
        assert_eq!(item_prefix(-1), "queue-0FFFFFFFF");
        assert_eq!(item_prefix(i32::MIN), "queue-080000000");
        assert_eq!(item_prefix(i32::MAX), "queue-17FFFFFFF");
        for priority in [0, 1, 10, -1, -2, i32::MIN, i32::MAX] {
            let name = format!("{}0000000042", item_prefix(priority));
            assert_eq!(item_key(&name), Some((priority, 42)), "{name}");
        }
        // Prefixes sort as their priorities do.
        let mut priorities = [5, -3, 0, i32::MAX, -1, i32::MIN, 1];
        let mut names: Vec<String> = priorities.iter().map(|&p| item_prefix(p)).collect();
        priorities.sort();
        names.sort();
        assert_eq!(
            names,
            priorities.iter().map(|&p| item_prefix(p)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn other_children_are_no_items() {
        for name in [
            "queue-0000000001",          // Curator's plain DistributedQueue
            "queue-0000000010000000001", // sign says negative, value is not
            "queue-1FFFFFFFF0000000001", // sign says positive, value is not
            "queue-10000000G0000000001",
            "queue-100000000000000000x",
            "queue-1000000000000000000-1",
            "qn-0000000001",
            "claims",
            "receipts",
        ] {
            assert_eq!(item_key(name), None, "{name}");
        }
    }

    #[test]
    fn envelopes_are_curators() {
        // ItemSerializer.serialize of one item "hi": version, ITEM, length, bytes, EOF.
        assert_eq!(envelope(b"hi"), [0, 1, 0, 1, 1, 0, 0, 0, 2, b'h', b'i', 2]);
        assert_eq!(envelope(b""), [0, 1, 0, 1, 1, 0, 0, 0, 0, 2]);
        for data in [&b""[..], b"x", b"payload with \x00 and \x02 inside"] {
            assert_eq!(open_envelope(envelope(data)), data);
        }
        // Several payloads (Curator's putMulti), a broken envelope, plain data: returned as they are.
        let multi = vec![0, 1, 0, 1, 1, 0, 0, 0, 1, b'a', 1, 0, 0, 0, 1, b'b', 2];
        assert_eq!(open_envelope(multi.clone()), multi);
        let truncated = vec![0, 1, 0, 1, 1, 0, 0, 0, 9, b'a', 2];
        assert_eq!(open_envelope(truncated.clone()), truncated);
        assert_eq!(open_envelope(b"plain".to_vec()), b"plain");
    }
}
