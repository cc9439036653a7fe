//! The parsers of the flags' values (clap `value_parser`s and what `zk/` reads from the environment and files):
//! connect strings, paths, durations, addresses, credentials, ACLs and SASL. Each checks everything it can before
//! anything connects, and its message says what was expected.
//!
//! One kind of value per file: `connect.rs` (connect strings), `path.rs` (paths), `duration.rs` (durations),
//! `address.rs` (addresses), `credential.rs` (credentials), `acl.rs` (ACLs), `sasl.rs` (SASL).

mod acl;
mod address;
mod connect;
mod credential;
mod duration;
mod path;
mod sasl;

pub use acl::{acl_spec, AclSpec};
pub use address::{socket_addr, SERVE_DEFAULT_LISTEN};
pub use connect::{connect_string, split_chroot, without_scheme};
pub use credential::{credential, Credential};
pub use duration::seconds;
pub use path::{recipe_path, tree_path};
pub use sasl::{sasl_spec, SaslMechanism, SaslSpec};
