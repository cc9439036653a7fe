//! auth and whoAmI.

use crate::record::record;

record! {
    /// auth request (xid −4).
    pub struct AuthPacket {
        /// Unused, 0.
        pub auth_type: i32,
        /// Scheme, e.g. `digest`.
        pub scheme: String,
        /// Credentials, e.g. `user:password`.
        pub auth: Vec<u8>,
    }

    /// One authenticated identity of a session.
    pub struct ClientInfo {
        /// Scheme.
        pub auth_scheme: String,
        /// User.
        pub user: String,
    }

    /// whoAmI reply.
    pub struct WhoAmIResponse {
        /// Identities.
        pub client_info: Vec<ClientInfo>,
    }
}
