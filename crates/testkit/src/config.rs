//! The files one ZooKeeper member runs from: `zoo.cfg`, `log4j.properties`, `data/myid`.

use std::fmt::Write as _;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// The ports of one member (`peer` and `election` are unused by a standalone server, `secure` is 0 without TLS).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemberPorts {
    pub client: u16,
    pub peer: u16,
    pub election: u16,
    pub secure: u16,
}

impl MemberPorts {
    pub(crate) fn client_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.client))
    }

    /// The secure client port's address, when the member has one.
    pub(crate) fn secure_addr(&self) -> Option<SocketAddr> {
        (self.secure != 0).then(|| SocketAddr::from((Ipv4Addr::LOCALHOST, self.secure)))
    }
}

/// Where one member keeps its files, all under the instance's temp dir.
#[derive(Clone, Debug)]
pub(crate) struct MemberDir {
    pub root: PathBuf,
}

impl MemberDir {
    pub(crate) fn zoo_cfg(&self) -> PathBuf {
        self.root.join("zoo.cfg")
    }
    pub(crate) fn log4j_properties(&self) -> PathBuf {
        self.root.join("log4j.properties")
    }
    pub(crate) fn data(&self) -> PathBuf {
        self.root.join("data")
    }
    /// The server log written by log4j.
    pub(crate) fn log(&self) -> PathBuf {
        self.root.join("zookeeper.log")
    }
    /// The JVM's stdout and stderr (crashes before logging starts end up here).
    pub(crate) fn console(&self) -> PathBuf {
        self.root.join("console.out")
    }
}

/// Settings shared by every member of an instance.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub tick_time_ms: u32,
    /// `key=value` lines that replace the defaults with the same key or are appended.
    pub overrides: Vec<(String, String)>,
}

/// The (quorum, election) ports of every member as they are: what a member names for its peers without links.
pub(crate) fn direct_view(all: &[MemberPorts]) -> Vec<(u16, u16)> {
    all.iter().map(|p| (p.peer, p.election)).collect()
}

/// Writes the files of member `index` (0-based; its `myid` is `index + 1`). `view`: the (quorum, election) ports
/// it names for each member (its own entry is where it listens; see [`crate::PeerLinks`] for the others).
pub(crate) fn write_member(
    dir: &MemberDir,
    index: usize,
    all: &[MemberPorts],
    view: &[(u16, u16)],
    settings: &Settings,
) -> io::Result<()> {
    std::fs::create_dir_all(dir.data())?;
    if all.len() > 1 {
        std::fs::write(dir.data().join("myid"), format!("{}\n", index + 1))?;
    }
    std::fs::write(dir.zoo_cfg(), zoo_cfg(&dir.data(), index, all, view, settings))?;
    std::fs::write(dir.log4j_properties(), log4j_properties(&dir.log()))?;
    Ok(())
}

fn zoo_cfg(
    data_dir: &Path,
    index: usize,
    all: &[MemberPorts],
    view: &[(u16, u16)],
    settings: &Settings,
) -> String {
    let mine = all[index];
    let mut entries: Vec<(String, String)> = [
        ("tickTime", settings.tick_time_ms.to_string()),
        ("initLimit", "10".into()),
        ("syncLimit", "5".into()),
        ("dataDir", data_dir.display().to_string()),
        ("clientPort", mine.client.to_string()),
        ("clientPortAddress", Ipv4Addr::LOCALHOST.to_string()),
        // Tests open many clients from 127.0.0.1; the default cap of 60 per address would refuse them.
        ("maxClientCnxns", "0".into()),
        ("admin.enableServer", "false".into()),
        ("4lw.commands.whitelist", "*".into()),
        // Tests kill the JVM, never the machine: the page cache survives, so fsync buys nothing but slowness.
        ("forceSync", "no".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if mine.secure != 0 {
        // TLS needs ZooKeeper's Netty connection factory (it serves the plain port too). The `ssl.*` keys come from
        // the builder's `config` entries.
        entries.push((
            "serverCnxnFactory".into(),
            "org.apache.zookeeper.server.NettyServerCnxnFactory".into(),
        ));
        entries.push(("secureClientPort".into(), mine.secure.to_string()));
        // ZooKeeper's default is the wildcard address, whatever clientPortAddress says.
        entries.push(("secureClientPortAddress".into(), Ipv4Addr::LOCALHOST.to_string()));
    }
    if all.len() > 1 {
        for (i, (peer, election)) in view.iter().enumerate() {
            let value = format!("{}:{}:{}", Ipv4Addr::LOCALHOST, peer, election);
            entries.push((format!("server.{}", i + 1), value));
        }
    }
    for (key, value) in &settings.overrides {
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.clone(),
            None => entries.push((key.clone(), value.clone())),
        }
    }
    entries.iter().fold(String::new(), |mut text, (k, v)| {
        let _ = writeln!(text, "{k}={v}");
        text
    })
}

/// A file appender in the member's directory; the console stays quiet.
fn log4j_properties(log_file: &Path) -> String {
    format!(
        "log4j.rootLogger=INFO, FILE\n\
         log4j.appender.FILE=org.apache.log4j.FileAppender\n\
         log4j.appender.FILE.File={}\n\
         log4j.appender.FILE.Append=true\n\
         log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n\
         log4j.appender.FILE.layout.ConversionPattern=%d{{ISO8601}} - %-5p [%t:%C{{1}}@%L] - %m%n\n",
        log_file.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(n: u16) -> Vec<MemberPorts> {
        (0..n)
            .map(|i| MemberPorts {
                client: 100 + i,
                peer: 200 + i,
                election: 300 + i,
                secure: 0,
            })
            .collect()
    }

    fn settings(tick_time_ms: u32, overrides: &[(&str, &str)]) -> Settings {
        let overrides = overrides
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()));
        Settings {
            tick_time_ms,
            overrides: overrides.collect(),
        }
    }

    /// The zoo.cfg of member `me` of `all`, which names its peers where they listen.
    fn direct_cfg(me: usize, all: &[MemberPorts], settings: &Settings) -> String {
        zoo_cfg(Path::new("/d"), me, all, &direct_view(all), settings)
    }

    /// Asserts that `text` has every one of `lines` (each with its newline).
    fn assert_has_lines(text: &str, lines: &[&str]) {
        for line in lines {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
    }

    #[test]
    fn standalone_config_has_no_server_lines_and_honours_overrides() {
        let settings = settings(500, &[("forceSync", "yes")]);
        let text = direct_cfg(0, &ports(1), &settings);
        assert_has_lines(&text, &["tickTime=500\n", "clientPort=100\n", "forceSync=yes\n"]);
        assert!(!text.contains("forceSync=no"));
        assert!(!text.contains("server."));
        assert!(!text.contains("secureClientPort"));
    }

    #[test]
    fn a_secure_port_brings_the_netty_factory() {
        let settings = settings(2000, &[("ssl.clientAuth", "none")]);
        let mut all = ports(1);
        all[0].secure = 400;
        let text = direct_cfg(0, &all, &settings);
        assert_has_lines(
            &text,
            &[
                "secureClientPort=400\n",
                "secureClientPortAddress=127.0.0.1\n",
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n",
            ],
        );
        assert!(text.ends_with("ssl.clientAuth=none\n"));
    }

    #[test]
    fn ensemble_config_lists_every_member() {
        let settings = settings(2000, &[("extra", "1")]);
        let text = direct_cfg(1, &ports(3), &settings);
        assert_has_lines(
            &text,
            &[
                "clientPort=101\n",
                "server.1=127.0.0.1:200:300\n",
                "server.3=127.0.0.1:202:302\n",
            ],
        );
        assert!(text.ends_with("extra=1\n"));
    }

    #[test]
    fn a_member_names_its_peers_as_its_view_says() {
        let settings = settings(2000, &[]);
        let view = [(900, 901), (201, 301), (902, 903)];
        let text = zoo_cfg(Path::new("/d"), 1, &ports(3), &view, &settings);
        assert_has_lines(
            &text,
            &[
                "server.1=127.0.0.1:900:901\n",
                "server.2=127.0.0.1:201:301\n",
                "server.3=127.0.0.1:902:903\n",
            ],
        );
    }
}
