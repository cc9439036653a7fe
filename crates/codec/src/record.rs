//! The `record!` macro: declares a plain jute record struct whose fields are encoded in order.
//!
//! Field encodings follow the Rust type: `i32`/`i64`/`bool` as themselves, `String` as a `ustring`
//! (null read as empty), `Option<Vec<u8>>` as a nullable `buffer`, `Vec<u8>` as a `buffer` (null read as
//! empty), `Vec<T>` of records as a `vector` (null read as empty), and nested records.

use crate::jute::{put_bool, put_buffer, put_i32, put_i64, put_str, put_vec, Decode, Encode, Reader};
use crate::DecodeError;

/// One field of a record (crate-internal glue for `record!`).
pub trait Field: Sized {
    /// Appends the field.
    fn put(&self, w: &mut Vec<u8>);
    /// Reads the field.
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

impl Field for i32 {
    fn put(&self, w: &mut Vec<u8>) {
        put_i32(w, *self)
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_i32()
    }
}

impl Field for i64 {
    fn put(&self, w: &mut Vec<u8>) {
        put_i64(w, *self)
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_i64()
    }
}

impl Field for bool {
    fn put(&self, w: &mut Vec<u8>) {
        put_bool(w, *self)
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_bool()
    }
}

impl Field for String {
    fn put(&self, w: &mut Vec<u8>) {
        put_str(w, self)
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_string()
    }
}

impl Field for Option<Vec<u8>> {
    fn put(&self, w: &mut Vec<u8>) {
        put_buffer(w, self.as_deref())
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_buffer()
    }
}

impl Field for Vec<u8> {
    fn put(&self, w: &mut Vec<u8>) {
        put_buffer(w, Some(self))
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_buffer().map(Option::unwrap_or_default)
    }
}

impl<T: Encode + Decode> Field for Vec<T> {
    fn put(&self, w: &mut Vec<u8>) {
        put_vec(w, self)
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_vec_or_empty()
    }
}

/// Declares jute record structs (see the module docs for field encodings).
macro_rules! record {
    ($( $(#[$meta:meta])* pub struct $name:ident { $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty, )* } )*) => {
        $(
            $(#[$meta])*
            #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
            pub struct $name {
                $( $(#[$fmeta])* pub $field: $ty, )*
            }

            impl $crate::Encode for $name {
                #[allow(unused_variables)]
                fn encode(&self, w: &mut Vec<u8>) {
                    $( $crate::record::Field::put(&self.$field, w); )*
                }
            }

            impl $crate::Decode for $name {
                #[allow(unused_variables)]
                fn decode(r: &mut $crate::Reader<'_>) -> Result<Self, $crate::DecodeError> {
                    Ok($name { $( $field: <$ty as $crate::record::Field>::get(r)?, )* })
                }
            }

            impl $crate::record::Field for $name {
                fn put(&self, w: &mut Vec<u8>) {
                    $crate::Encode::encode(self, w)
                }
                fn get(r: &mut $crate::Reader<'_>) -> Result<Self, $crate::DecodeError> {
                    <$name as $crate::Decode>::decode(r)
                }
            }
        )*
    };
}
pub(crate) use record;
