//! `HOST:PORT` addresses (`zklock serve --listen` and `--metrics`), and where `zklock serve` listens by
//! default.

/// `HOST:PORT` to an address: an IP address as it is, a host name resolved (`localhost:2181`), its first address.
pub fn socket_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs as _;
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    if !text.contains(':') {
        return Err(format!("{text:?} is not HOST:PORT"));
    }
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {text:?}: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// Where `zklock serve` listens without `--listen` or `--config`: ZooKeeper's usual client port, on loopback only.
pub const SERVE_DEFAULT_LISTEN: std::net::SocketAddr =
    std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 2181);
