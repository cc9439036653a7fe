//! multi and multiRead: a sequence of `MultiHeader` + op, terminated by `{type −1, done true, err −1}`.

use crate::jute::{Decode, Encode, Reader};
use crate::record::record;
use crate::{
    CheckVersionRequest, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest, DecodeError,
    DeleteRequest, ErrorResponse, GetChildrenRequest, GetChildrenResponse, GetDataRequest, GetDataResponse,
    OpCode, SetDataRequest, StatResponse,
};

record! {
    /// Precedes every op of a multi request and every result of a multi response.
    pub struct MultiHeader {
        /// Raw opcode of the op / result (−1 for an error result or the terminator).
        pub op: i32,
        /// True only on the terminator.
        pub done: bool,
        /// Error code (results), −1 in requests.
        pub err: i32,
    }
}

impl MultiHeader {
    /// The terminator `{−1, true, −1}`.
    pub const DONE: MultiHeader = MultiHeader {
        op: -1,
        done: true,
        err: -1,
    };

    /// The header of an entry: an op of a request (`err` −1) or a result (its error code, 0 on success).
    pub fn entry(op: OpCode, err: i32) -> MultiHeader {
        MultiHeader {
            op: op.into(),
            done: false,
            err,
        }
    }
}

/// One op of a multi / multiRead request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// create, create2 or createContainer (`op` tells which; the body is the same).
    Create {
        /// [`OpCode::Create`], [`OpCode::Create2`] or [`OpCode::CreateContainer`].
        op: OpCode,
        /// The request.
        req: CreateRequest,
    },
    /// createTTL.
    CreateTtl(CreateTtlRequest),
    /// delete.
    Delete(DeleteRequest),
    /// setData.
    SetData(SetDataRequest),
    /// check version.
    Check(CheckVersionRequest),
    /// getData (multiRead only).
    GetData(GetDataRequest),
    /// getChildren (multiRead only).
    GetChildren(GetChildrenRequest),
}

impl MultiOp {
    /// The op's opcode.
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOp::Create { op, .. } => *op,
            MultiOp::CreateTtl(_) => OpCode::CreateTtl,
            MultiOp::Delete(_) => OpCode::Delete,
            MultiOp::SetData(_) => OpCode::SetData,
            MultiOp::Check(_) => OpCode::Check,
            MultiOp::GetData(_) => OpCode::GetData,
            MultiOp::GetChildren(_) => OpCode::GetChildren,
        }
    }

    /// The path the op acts on.
    pub fn path(&self) -> &str {
        match self {
            MultiOp::Create { req, .. } => &req.path,
            MultiOp::CreateTtl(r) => &r.path,
            MultiOp::Delete(r) => &r.path,
            MultiOp::SetData(r) => &r.path,
            MultiOp::Check(r) => &r.path,
            MultiOp::GetData(r) => &r.path,
            MultiOp::GetChildren(r) => &r.path,
        }
    }
}

/// A multi or multiRead request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiRequest {
    /// The ops, in order.
    pub ops: Vec<MultiOp>,
}

impl Encode for MultiRequest {
    fn encode(&self, w: &mut Vec<u8>) {
        for op in &self.ops {
            MultiHeader::entry(op.op_code(), -1).encode(w);
            match op {
                MultiOp::Create { req, .. } => req.encode(w),
                MultiOp::CreateTtl(r) => r.encode(w),
                MultiOp::Delete(r) => r.encode(w),
                MultiOp::SetData(r) => r.encode(w),
                MultiOp::Check(r) => r.encode(w),
                MultiOp::GetData(r) => r.encode(w),
                MultiOp::GetChildren(r) => r.encode(w),
            }
        }
        MultiHeader::DONE.encode(w);
    }
}

impl Decode for MultiRequest {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let ops = decode_entries(r, "multi op", |op, r| {
            Ok(Some(match op {
                OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => MultiOp::Create {
                    op,
                    req: CreateRequest::decode(r)?,
                },
                OpCode::CreateTtl => MultiOp::CreateTtl(CreateTtlRequest::decode(r)?),
                OpCode::Delete => MultiOp::Delete(DeleteRequest::decode(r)?),
                OpCode::SetData => MultiOp::SetData(SetDataRequest::decode(r)?),
                OpCode::Check => MultiOp::Check(CheckVersionRequest::decode(r)?),
                OpCode::GetData => MultiOp::GetData(GetDataRequest::decode(r)?),
                OpCode::GetChildren => MultiOp::GetChildren(GetChildrenRequest::decode(r)?),
                _ => return Ok(None),
            }))
        })?;
        Ok(MultiRequest { ops })
    }
}

/// Reads the entries of a multi (the ops of a request, the results of a response) up to the done header. `entry`
/// reads the body of an entry with the header's op code, `None` for an op code that has no place here (an error
/// naming `what`, as is an op code that does not exist).
fn decode_entries<T>(
    r: &mut Reader<'_>,
    what: &'static str,
    mut entry: impl FnMut(OpCode, &mut Reader<'_>) -> Result<Option<T>, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut entries = Vec::new();
    // Each iteration consumes at least a 9-byte header, so the loop is bounded by the frame size.
    loop {
        let h = MultiHeader::decode(r)?;
        if h.done {
            return Ok(entries);
        }
        let invalid = || DecodeError::InvalidValue { what, value: h.op };
        let op = OpCode::try_from(h.op).map_err(|_| invalid())?;
        entries.push(entry(op, r)?.ok_or_else(invalid)?);
    }
}

/// One result of a multi / multiRead response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// create: path only (type 1).
    Create(CreateResponse),
    /// create2 / createTTL / createContainer: path and stat.
    Create2 {
        /// Which create opcode the op had (echoed in the header).
        op: OpCode,
        /// Path and stat.
        resp: Create2Response,
    },
    /// delete: no body.
    Delete,
    /// check: no body.
    Check,
    /// setData: stat.
    SetData(StatResponse),
    /// getData (multiRead).
    GetData(GetDataResponse),
    /// getChildren (multiRead).
    GetChildren(GetChildrenResponse),
    /// Error result (header type −1, body = the code). In a failed multi, ops before the failing one carry
    /// 0, the failing one its code and later ones −2 (RuntimeInconsistency).
    Error(i32),
}

/// A multi or multiRead response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiResponse {
    /// The results, one per op.
    pub results: Vec<MultiResult>,
}

impl Encode for MultiResponse {
    fn encode(&self, w: &mut Vec<u8>) {
        for res in &self.results {
            let (op, err) = match res {
                MultiResult::Create(_) => (OpCode::Create, 0),
                MultiResult::Create2 { op, .. } => (*op, 0),
                MultiResult::Delete => (OpCode::Delete, 0),
                MultiResult::Check => (OpCode::Check, 0),
                MultiResult::SetData(_) => (OpCode::SetData, 0),
                MultiResult::GetData(_) => (OpCode::GetData, 0),
                MultiResult::GetChildren(_) => (OpCode::GetChildren, 0),
                MultiResult::Error(e) => (OpCode::Error, *e),
            };
            MultiHeader::entry(op, err).encode(w);
            match res {
                MultiResult::Create(r) => r.encode(w),
                MultiResult::Create2 { resp, .. } => resp.encode(w),
                MultiResult::Delete | MultiResult::Check => {}
                MultiResult::SetData(r) => r.encode(w),
                MultiResult::GetData(r) => r.encode(w),
                MultiResult::GetChildren(r) => r.encode(w),
                MultiResult::Error(e) => ErrorResponse { err: *e }.encode(w),
            }
        }
        MultiHeader::DONE.encode(w);
    }
}

impl Decode for MultiResponse {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let results = decode_entries(r, "multi result", |op, r| {
            Ok(Some(match op {
                OpCode::Create => MultiResult::Create(CreateResponse::decode(r)?),
                OpCode::Create2 | OpCode::CreateTtl | OpCode::CreateContainer => MultiResult::Create2 {
                    op,
                    resp: Create2Response::decode(r)?,
                },
                OpCode::Delete => MultiResult::Delete,
                OpCode::Check => MultiResult::Check,
                OpCode::SetData => MultiResult::SetData(StatResponse::decode(r)?),
                OpCode::GetData => MultiResult::GetData(GetDataResponse::decode(r)?),
                OpCode::GetChildren => MultiResult::GetChildren(GetChildrenResponse::decode(r)?),
                OpCode::Error => MultiResult::Error(ErrorResponse::decode(r)?.err),
                _ => return Ok(None),
            }))
        })?;
        Ok(MultiResponse { results })
    }
}
