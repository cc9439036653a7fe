//! Single requests and multi: null versus empty data, invalid paths in ZooKeeper's order, zxids of failed
//! writes, and a failed multi's encoding.

use zklock_codec::*;

use super::{create, err};
use crate::common::{server, Raw};

#[tokio::test]
async fn null_and_empty_data_round_trip_distinctly() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    for (path, data) in [("/null", None), ("/empty", Some(&b""[..]))] {
        assert_eq!(raw.call(OpCode::Create, &create(path, data, 0)).await.0.err, 0);
        let (h, body) = raw
            .call(
                OpCode::GetData,
                &GetDataRequest {
                    path: path.into(),
                    watch: false,
                },
            )
            .await;
        assert_eq!(h.err, 0);
        assert_eq!(
            GetDataResponse::from_bytes(&body).unwrap().data,
            data.map(<[u8]>::to_vec)
        );
    }
}

#[tokio::test]
async fn invalid_paths_are_bad_arguments_in_zookeeper_order() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let cases: &[(&str, i32, ErrorCode)] = &[
        ("a", 0, ErrorCode::BadArguments),
        ("/a\u{0}b", 0, ErrorCode::BadArguments),
        ("/zookeeper/", 0, ErrorCode::BadArguments),
        ("/zookeeper//x", 0, ErrorCode::NoNode),
        ("/.", 0, ErrorCode::BadArguments),
        ("/x/..", 0, ErrorCode::NoNode),
        ("/\u{1}", 0, ErrorCode::BadArguments),
        ("/\u{fff0}", 0, ErrorCode::BadArguments),
        ("/\u{1F600}", 0, ErrorCode::BadArguments),
        ("/a", 7, ErrorCode::BadArguments),
        ("/ttl", 5, ErrorCode::Unimplemented),
        ("/zookeeper", 0, ErrorCode::NodeExists),
        ("/", 0, ErrorCode::NodeExists),
    ];
    for (path, flags, code) in cases {
        let (h, _) = raw.call(OpCode::Create, &create(path, None, *flags)).await;
        assert_eq!(h.err, err(*code), "create {path:?} flags {flags}");
    }
    for path in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config", "/"] {
        let (h, _) = raw
            .call(
                OpCode::Delete,
                &DeleteRequest {
                    path: path.into(),
                    version: -1,
                },
            )
            .await;
        assert_eq!(h.err, err(ErrorCode::BadArguments), "delete {path}");
    }
    // The trailing slash is fine for a sequential create: the suffix completes the name.
    let (h, body) = raw.call(OpCode::Create, &create("/zookeeper/", None, 2)).await;
    assert_eq!(h.err, 0);
    assert_eq!(
        CreateResponse::from_bytes(&body).unwrap().path,
        "/zookeeper/0000000000"
    );
}

#[tokio::test]
async fn every_write_consumes_a_zxid_even_when_it_fails() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let (h1, _) = raw.call(OpCode::Create, &create("/z", None, 0)).await;
    let (h2, _) = raw.call(OpCode::Create, &create("/z", None, 0)).await;
    assert_eq!(h2.err, err(ErrorCode::NodeExists));
    assert_eq!(h2.zxid, h1.zxid + 1);
    let (h3, _) = raw.exists("/z", false).await;
    assert_eq!(h3.zxid, h2.zxid, "reads do not");
    let (h4, _) = raw
        .call(
            OpCode::Delete,
            &DeleteRequest {
                path: "/nope".into(),
                version: -1,
            },
        )
        .await;
    assert_eq!((h4.err, h4.zxid), (err(ErrorCode::NoNode), h3.zxid + 1));
}

#[tokio::test]
async fn failed_multi_uses_zookeepers_encoding() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let ops = MultiRequest {
        ops: vec![
            MultiOp::Create {
                op: OpCode::Create,
                req: create("/ok", None, 0),
            },
            MultiOp::Delete(DeleteRequest {
                path: "/missing".into(),
                version: -1,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/ok".into(),
                data: None,
                version: -1,
            }),
        ],
    };
    let (h, body) = raw.call(OpCode::Multi, &ops).await;
    assert_eq!(h.err, 0, "a failed multi still has header err 0");
    let resp = MultiResponse::from_bytes(&body).unwrap();
    assert_eq!(
        resp.results,
        vec![
            MultiResult::Error(0),
            MultiResult::Error(-101),
            MultiResult::Error(-2)
        ]
    );
    let (h, _) = raw.exists("/ok", false).await;
    assert_eq!(h.err, err(ErrorCode::NoNode));
}
