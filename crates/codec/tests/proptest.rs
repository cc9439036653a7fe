//! Property tests: no decoder panics on arbitrary bytes, and encode → decode is the identity.

use proptest::prelude::*;
use zklock_codec::*;

/// Runs every decoder over `bytes`; none may panic (errors are fine).
fn decode_all(bytes: &[u8]) {
    macro_rules! try_all {
        ($($t:ty),* $(,)?) => { $( let _ = <$t>::from_bytes(bytes); )* };
    }
    try_all!(
        ConnectRequest,
        ConnectResponse,
        RequestHeader,
        ReplyHeader,
        Stat,
        Id,
        Acl,
        CreateRequest,
        CreateTtlRequest,
        CreateResponse,
        Create2Response,
        DeleteRequest,
        ExistsRequest,
        StatResponse,
        GetDataRequest,
        GetDataResponse,
        SetDataRequest,
        CheckVersionRequest,
        SyncRequest,
        SyncResponse,
        ErrorResponse,
        GetAclRequest,
        GetAclResponse,
        SetAclRequest,
        SetAclResponse,
        GetChildrenRequest,
        GetChildrenResponse,
        GetChildren2Response,
        GetAllChildrenNumberRequest,
        GetAllChildrenNumberResponse,
        GetEphemeralsRequest,
        GetEphemeralsResponse,
        WatcherEvent,
        SetWatches,
        SetWatches2,
        AddWatchRequest,
        RemoveWatchesRequest,
        AuthPacket,
        ClientInfo,
        WhoAmIResponse,
        MultiHeader,
        MultiRequest,
        MultiResponse,
    );
    let _ = frame::decode_frame(bytes, frame::DEFAULT_MAX_FRAME_LEN);
}

fn roundtrip<T: Encode + Decode + PartialEq + std::fmt::Debug>(v: &T) {
    let bytes = v.to_bytes();
    assert_eq!(&T::from_bytes(&bytes).unwrap(), v);
}

fn stat() -> impl Strategy<Value = Stat> {
    (
        any::<[i64; 4]>(),
        any::<[i32; 3]>(),
        any::<i64>(),
        any::<[i32; 2]>(),
        any::<i64>(),
    )
        .prop_map(|(l, v, owner, n, pzxid)| Stat {
            czxid: l[0],
            mzxid: l[1],
            ctime: l[2],
            mtime: l[3],
            version: v[0],
            cversion: v[1],
            aversion: v[2],
            ephemeral_owner: owner,
            data_length: n[0],
            num_children: n[1],
            pzxid,
        })
}

fn acl() -> impl Strategy<Value = Acl> {
    (any::<i32>(), ".{0,8}", ".{0,8}").prop_map(|(perms, scheme, id)| Acl {
        perms,
        id: Id { scheme, id },
    })
}

fn data() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..32))
}

fn create() -> impl Strategy<Value = CreateRequest> {
    (
        "/.{0,12}",
        data(),
        proptest::collection::vec(acl(), 0..3),
        any::<i32>(),
    )
        .prop_map(|(path, data, acl, flags)| CreateRequest {
            path,
            data,
            acl,
            flags,
        })
}

fn multi_op() -> impl Strategy<Value = MultiOp> {
    prop_oneof![
        create().prop_map(|req| MultiOp::Create {
            op: OpCode::Create,
            req
        }),
        create().prop_map(|req| MultiOp::Create {
            op: OpCode::Create2,
            req
        }),
        ("/.{0,12}", any::<i32>())
            .prop_map(|(path, version)| MultiOp::Delete(DeleteRequest { path, version })),
        ("/.{0,12}", data(), any::<i32>())
            .prop_map(|(path, data, version)| MultiOp::SetData(SetDataRequest { path, data, version })),
        ("/.{0,12}", any::<i32>())
            .prop_map(|(path, version)| MultiOp::Check(CheckVersionRequest { path, version })),
        ("/.{0,12}", any::<bool>())
            .prop_map(|(path, watch)| MultiOp::GetData(GetDataRequest { path, watch })),
    ]
}

fn multi_result() -> impl Strategy<Value = MultiResult> {
    prop_oneof![
        ".{0,12}".prop_map(|path| MultiResult::Create(CreateResponse { path })),
        (".{0,12}", stat()).prop_map(|(path, stat)| MultiResult::Create2 {
            op: OpCode::Create2,
            resp: Create2Response { path, stat }
        }),
        Just(MultiResult::Delete),
        Just(MultiResult::Check),
        stat().prop_map(|stat| MultiResult::SetData(StatResponse { stat })),
        (data(), stat()).prop_map(|(data, stat)| MultiResult::GetData(GetDataResponse { data, stat })),
        any::<i32>().prop_map(MultiResult::Error),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        decode_all(&bytes);
    }

    #[test]
    fn plausible_multi_bytes_never_panic(ops in proptest::collection::vec(multi_op(), 0..4), cut in any::<usize>(), flip in any::<(usize, u8)>()) {
        // Truncated and bit-flipped encodings of valid records reach deeper decoder paths than pure noise.
        let mut bytes = MultiRequest { ops }.to_bytes();
        if !bytes.is_empty() {
            let i = flip.0 % bytes.len();
            bytes[i] ^= flip.1;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        decode_all(&bytes);
    }

    #[test]
    fn stat_round_trips(s in stat()) {
        roundtrip(&s);
    }

    #[test]
    fn create_round_trips(c in create()) {
        roundtrip(&c);
    }

    #[test]
    fn connect_round_trips(t in any::<(i32, i64, i32, i64)>(), passwd in proptest::collection::vec(any::<u8>(), 0..20), ro in proptest::option::of(any::<bool>())) {
        roundtrip(&ConnectRequest { protocol_version: t.0, last_zxid_seen: t.1, time_out: t.2, session_id: t.3, passwd: passwd.clone(), read_only: ro });
        roundtrip(&ConnectResponse { protocol_version: t.0, time_out: t.2, session_id: t.3, passwd, read_only: ro });
    }

    #[test]
    fn multi_round_trips(ops in proptest::collection::vec(multi_op(), 0..5), results in proptest::collection::vec(multi_result(), 0..5)) {
        roundtrip(&MultiRequest { ops });
        roundtrip(&MultiResponse { results });
    }

    #[test]
    fn set_watches_round_trips(z in any::<i64>(), lists in proptest::collection::vec(proptest::collection::vec("/.{0,6}", 0..3), 5)) {
        roundtrip(&SetWatches2 {
            relative_zxid: z,
            data_watches: lists[0].clone(),
            exist_watches: lists[1].clone(),
            child_watches: lists[2].clone(),
            persistent_watches: lists[3].clone(),
            persistent_recursive_watches: lists[4].clone(),
        });
    }
}

#[test]
fn known_bytes_of_a_java_connect_request() {
    // 45-byte first frame body as sent by the Java client and kazoo: readOnly byte present.
    let req = ConnectRequest {
        time_out: 30000,
        passwd: vec![0; 16],
        read_only: Some(false),
        ..Default::default()
    };
    let bytes = req.to_bytes();
    assert_eq!(bytes.len(), 45);
    assert_eq!(ConnectRequest::from_bytes(&bytes).unwrap(), req);
    // The Rust client's 29-byte form has no readOnly byte and an empty password.
    let rust = ConnectRequest {
        time_out: 30000,
        ..Default::default()
    };
    assert_eq!(rust.to_bytes().len(), 28);
    assert_eq!(
        ConnectRequest::from_bytes(&rust.to_bytes()).unwrap().read_only,
        None
    );
}
