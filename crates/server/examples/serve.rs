//! Runs the embedded server in the foreground: `cargo run -p zklock-server --example serve -- [PORT | zoo.cfg]`.
//! Handy for poking it with zkCli.sh, kazoo or `echo ruok | nc`.

use zklock_server::{Server, ServerConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let arg = std::env::args().nth(1);
    let config = match arg.as_deref() {
        Some(a) if a.parse::<u16>().is_ok() => ServerConfig {
            listen: ([127, 0, 0, 1], a.parse::<u16>()?).into(),
            ..Default::default()
        },
        Some(path) => ServerConfig::from_zoo_cfg(std::path::Path::new(path))?,
        None => ServerConfig::default(),
    };
    let server = Server::start(config).await?;
    println!("listening on {}", server.connect_string());
    tokio::signal::ctrl_c().await?;
    server.shutdown().await?;
    Ok(())
}
