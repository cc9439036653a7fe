//! The `zoo.cfg` keys the embedded server does not apply, and why: replication settings, ZooKeeper tuning it has no
//! counterpart for, features it does otherwise; `None` for those whose value asks for what it does anyway.

use super::auth_keys::SASL_PROVIDER;

pub(super) const REPLICATION: &str =
    "not supported by the embedded server (a replication setting: it is a single node, never part of an ensemble)";

/// Why a zoo.cfg key the parser does not apply is ignored; `None` when ignoring it changes nothing (its value asks
/// for what the embedded server does anyway).
pub(super) fn ignored_because(key: &str, value: &str) -> Option<String> {
    let is = |v: &str| value.eq_ignore_ascii_case(v);
    let not_supported = |why: &str| Some(format!("not supported by the embedded server ({why})"));
    match key {
        // One connection layer serves both ports; ZooKeeper needs Netty for TLS, the embedded server does not.
        "serverCnxnFactory" => None,
        "standaloneEnabled" if is("true") => None,
        "reconfigEnabled" if is("false") => None,
        "admin.enableServer" if is("false") => None,
        "forceSync" if is("yes") => None,
        "skipACL" if is("no") => None,
        "ssl.hostnameVerification" | "ssl.clientHostnameVerification" => None,
        "ssl.crl" | "ssl.ocsp" if is("false") => None,
        "authProvider.1"
        | "authProvider.2"
        | "authProvider.3"
        | "authProvider.x509"
        | "authProvider.digest"
        | "authProvider.ip"
            if matches!(
                value,
                "org.apache.zookeeper.server.auth.DigestAuthenticationProvider"
                    | "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
                    | "org.apache.zookeeper.server.auth.IPAuthenticationProvider"
                    | SASL_PROVIDER
            ) =>
        {
            None
        }
        _ if key.starts_with("authProvider.") => not_supported(
            "only the built-in ip, digest, x509 and sasl schemes; no custom authentication providers",
        ),
        "initLimit"
        | "syncLimit"
        | "connectToLearnerMasterLimit"
        | "electionAlg"
        | "electionPortBindRetry"
        | "quorumListenOnAllIPs"
        | "peerType"
        | "syncEnabled"
        | "dynamicConfigFile"
        | "observerMasterPort"
        | "standaloneEnabled"
        | "reconfigEnabled"
        | "localSessionsEnabled"
        | "localSessionsUpgradingEnabled"
        | "sslQuorum"
        | "sslQuorumReloadCertFiles"
        | "portUnification"
        | "oraclePath"
        | "leaderServes"
        | "cnxTimeout"
        | "quorum.cnxn.threads.size" => Some(REPLICATION.into()),
        _ if key.starts_with("server.")
            || key.starts_with("group.")
            || key.starts_with("weight.")
            || key.starts_with("multiAddress.")
            || key.starts_with("quorum.auth.")
            || key.starts_with("ssl.quorum.")
            || key.starts_with("learner.") =>
        {
            Some(REPLICATION.into())
        }
        "autopurge.snapRetainCount" | "autopurge.purgeInterval" => {
            not_supported("it deletes old snapshots and logs itself after each snapshot")
        }
        _ if key.starts_with("metricsProvider.") => {
            not_supported("`zklock serve --metrics ADDR` serves the mntr figures to Prometheus")
        }
        _ if key.starts_with("admin.") => {
            not_supported("it has no AdminServer; the four-letter words answer on the client port")
        }
        "forceSync" => not_supported("it always syncs its log before answering"),
        "skipACL" => not_supported("ACLs are always checked"),
        "emulate353TTLNodes" => not_supported("TTL nodes are always encoded as ZooKeeper 3.5.4+ does"),
        "client.portUnification" => {
            not_supported("plaintext and TLS are served on separate ports: clientPort and secureClientPort")
        }
        "ssl.ciphersuites" => not_supported("rustls's default cipher suites are used"),
        "ssl.crl" | "ssl.ocsp" => not_supported("no certificate revocation checks"),
        "ssl.context.supplier.class" | "ssl.authProvider" | "ssl.sslProvider" => {
            not_supported("TLS is rustls with the built-in x509 scheme")
        }
        "ssl.handshakeDetectionTimeoutMillis"
        | "client.certReload"
        | "netty.server.outstandingHandshake.limit" => not_supported("a Netty setting"),
        _ if key.starts_with("jvm.pause.") => not_supported("no JVM"),
        "clientPortListenBacklog"
        | "maxCnxns"
        | "globalOutstandingLimit"
        | "preAllocSize"
        | "commitLogCount"
        | "txnLogSizeLimitInKb"
        | "fsync.warningthresholdms"
        | "maxResponseCacheSize"
        | "maxGetChildrenResponseCacheSize"
        | "digest.enabled"
        | "audit.enable"
        | "watchManagerName"
        | "closeSessionTxn.enabled"
        | "enforceQuota"
        | "requestThrottleLimit"
        | "flushDelay"
        | "maxBatchSize" => not_supported("a ZooKeeper tuning setting it has no counterpart for"),
        _ => Some("unknown key".into()),
    }
}
