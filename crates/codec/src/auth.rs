//! auth, SASL and whoAmI.

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

    /// SASL request (opcode 102, `GetSASLRequest` in ZooKeeper's jute): the client's token of one step.
    pub struct GetSaslRequest {
        /// The client's token (empty at the start of DIGEST-MD5).
        pub token: Vec<u8>,
    }

    /// SASL reply (`SetSASLResponse`): the server's next challenge; null when it has none.
    pub struct SetSaslResponse {
        /// The server's token.
        pub token: Option<Vec<u8>>,
    }
}
