//! Free TCP ports on 127.0.0.1 for servers we launch as separate processes.
//!
//! Ports are picked *below* the kernel's ephemeral range: an ensemble member that is down (killed, about to be
//! restarted) must get its ports back, and ports in the ephemeral range can meanwhile be taken as the source port of
//! any outgoing connection (for example the surviving members trying to reach it). Ports handed out once are never
//! handed out again by this process, so two instances started in parallel cannot collide with each other.

use std::collections::HashSet;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, OnceLock};

use rand::Rng;

const LOWEST: u16 = 15_000;
const ATTEMPTS: usize = 200;

/// Returns a port on 127.0.0.1 that nothing listens on right now and that this process has not handed out before.
///
/// There is an unavoidable window between this check and the server binding the port; callers that launch servers
/// retry with fresh ports when a bind fails.
pub fn free_port() -> io::Result<u16> {
    static HANDED_OUT: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    let handed_out = HANDED_OUT.get_or_init(Default::default);
    let highest = ephemeral_range_start().saturating_sub(1).max(LOWEST + 1_000);
    let mut rng = rand::thread_rng();
    for _ in 0..ATTEMPTS {
        let port = rng.gen_range(LOWEST..=highest);
        if handed_out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&port)
        {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            handed_out.lock().unwrap_or_else(|e| e.into_inner()).insert(port);
            return Ok(port);
        }
    }
    // Below the ephemeral range everything seems taken; let the kernel choose.
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
    handed_out.lock().unwrap_or_else(|e| e.into_inner()).insert(port);
    Ok(port)
}

/// The first port of `net.ipv4.ip_local_port_range` (32768 when it cannot be read).
fn ephemeral_range_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}
