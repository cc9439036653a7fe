//! `zklock serve`: the embedded ZooKeeper-compatible server as a standalone process.

use anyhow::{Context, Result};
use tokio::signal::unix::{signal, SignalKind};
use zklock_server::{Server, ServerConfig};

use crate::cli::ServeArgs;

pub async fn serve(args: ServeArgs) -> Result<i32> {
    let mut config = match &args.config {
        Some(path) => {
            ServerConfig::from_zoo_cfg(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => ServerConfig::default(),
    };
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(dir) = &args.data_dir {
        config.data_dir = Some(dir.clone());
    }
    let server = Server::start(config).await.context("starting the server")?;
    tracing::info!(addr = %server.local_addr(), "zklock server serving");
    println!("zklock server listening on {}", server.local_addr());
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down");
    server.shutdown().await.context("shutting down")?;
    Ok(0)
}
