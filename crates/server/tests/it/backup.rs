//! A backup while serving (`Server::backup`, `zklock serve --backup-dir`): a new data directory holding the state
//! at one zxid, which a server started on it restores — every node acknowledged before the backup, nothing written
//! after it; a directory that is not empty is refused.

use zklock_server::ServerConfig;
use zookeeper_client::{Acls, CreateMode};

use crate::common::{client, server_with};

#[tokio::test]
async fn a_backup_restores_the_state_at_its_zxid() {
    let data = tempfile::tempdir().unwrap();
    let backups = tempfile::tempdir().unwrap();
    let config = |dir: &std::path::Path| ServerConfig {
        data_dir: Some(dir.to_path_buf()),
        ..Default::default()
    };
    let server = server_with(config(data.path())).await;
    let zk = client(&server).await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.create("/config", b"v1", &persistent).await.unwrap();
    zk.create("/config/a", b"a", &persistent).await.unwrap();
    zk.set_data("/config", b"v2", None).await.unwrap();
    let (_, stat) = zk.get_data("/config").await.unwrap();

    let backup = backups.path().join("b1");
    let zxid = server.backup(&backup).await.unwrap();
    assert!(zxid >= stat.mzxid, "every acknowledged write is in it");
    // Written after the backup: not in it.
    zk.create("/later", b"", &persistent).await.unwrap();
    // A backup never overwrites: the directory is not empty now.
    let err = server.backup(&backup).await.unwrap_err();
    assert!(err.to_string().contains("new, empty directory"), "{err}");
    drop(zk);
    server.shutdown().await.unwrap();

    let restored = server_with(config(&backup)).await;
    let zk = client(&restored).await;
    let (data, restored_stat) = zk.get_data("/config").await.unwrap();
    assert_eq!((data.as_slice(), restored_stat), (&b"v2"[..], stat));
    assert_eq!(zk.get_data("/config/a").await.unwrap().0, b"a");
    assert!(
        zk.check_stat("/later").await.unwrap().is_none(),
        "written after the backup"
    );
    // The restored server goes on from the backup's zxid.
    let (made, _) = zk.create("/after-restore", b"", &persistent).await.unwrap();
    assert!(made.czxid > zxid);
    drop(zk);
    restored.shutdown().await.unwrap();
}
