//! Connect strings (`--connect`, `ZKLOCK_CONNECT`): the servers, each optionally `tcp://` or `tcp+tls://`, and
//! the chroot.

use super::path::check_path;

/// A ZooKeeper connect string, `host:port[,host:port...][/chroot]`, checked before any connection is tried. Each
/// server may be written `host`, `host:port`, `[ipv6]:port`, optionally with `tcp://` or `tcp+tls://` (TLS); a
/// missing port is ZooKeeper's 2181. The chroot, if any, must be a valid absolute ZooKeeper path.
pub fn connect_string(text: &str) -> Result<String, String> {
    let (servers, chroot) = split_chroot(text);
    if servers.is_empty() {
        return Err("no servers: expected host:port[,host:port...][/chroot]".to_owned());
    }
    for server in servers.split(',') {
        check_server(without_scheme(server))
            .map_err(|why| format!("{why} in {server:?}: expected host:port[,host:port...][/chroot]"))?;
    }
    if let Some(chroot) = chroot {
        check_chroot(chroot).map_err(|why| format!("bad chroot {chroot:?}: {why}"))?;
    }
    Ok(text.to_owned())
}

/// A server of a connect string without its `tcp://` or `tcp+tls://`.
pub fn without_scheme(server: &str) -> &str {
    server
        .strip_prefix("tcp://")
        .or_else(|| server.strip_prefix("tcp+tls://"))
        .unwrap_or(server)
}

/// The servers and the chroot: as zookeeper-client reads it, the chroot follows the last server (after its
/// `tcp://` or `tcp+tls://`, if any).
pub fn split_chroot(text: &str) -> (&str, Option<&str>) {
    let last = text.rsplit(',').next().unwrap_or(text);
    let offset = text.len() - last.len();
    let body = last.len() - without_scheme(last).len();
    match last[body..].find('/') {
        Some(i) => (&text[..offset + body + i], Some(&text[offset + body + i..])),
        None => (text, None),
    }
}

fn check_server(server: &str) -> Result<(), String> {
    if server.is_empty() {
        return Err("an empty server".to_owned());
    }
    let (host, port) = if let Some(rest) = server.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("an unclosed '['")?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':').ok_or("junk after ']'")?)),
        }
    } else {
        match server.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (server, None),
        }
    };
    if host.is_empty() {
        return Err("no host".to_owned());
    }
    let bracketed = server.starts_with('[');
    if host.contains([' ', '[', ']', '/']) || (!bracketed && host.contains(':')) {
        return Err(format!("a bad host {host:?}"));
    }
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(1..) => {}
            _ => return Err(format!("a bad port {port:?} (1 to 65535)")),
        }
    }
    Ok(())
}

fn check_chroot(chroot: &str) -> Result<(), &'static str> {
    check_path(chroot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings_are_checked() {
        for good in [
            "127.0.0.1:2181",
            "zk1:2181,zk2:2181,zk3:2181/app",
            "zk1",
            "[::1]:2181",
            "tcp://zk1:2181,tcp://zk2:2181/chroot/deeper",
            "h:1/",
        ] {
            assert_eq!(connect_string(good).as_deref(), Ok(good), "{good}");
        }
        for bad in [
            "",
            "/chroot",
            "zk1:99999",
            "zk1:0",
            "zk1:port",
            "zk1:2181,,zk2:2181",
            ":2181",
            "zk1:2181/app/",
            "zk1:2181/a//b",
            "zk1:2181/a/../b",
            "[::1:2181",
            "zk1:2181 zk2:2181",
            "zk1/x:2181,zk2:2181",
            "tcp+tls://",
            "tcp+tls://zk1:0",
        ] {
            assert!(connect_string(bad).is_err(), "{bad}");
        }
        for good in [
            "tcp+tls://zk1:2281",
            "tcp+tls://zk1:2281,tcp://zk2:2181/app",
            "zk1:2281,tcp+tls://zk2/app",
        ] {
            assert_eq!(connect_string(good).as_deref(), Ok(good), "{good}");
        }
        assert_eq!(
            split_chroot("tcp+tls://zk1:2281/app"),
            ("tcp+tls://zk1:2281", Some("/app"))
        );
    }
}
