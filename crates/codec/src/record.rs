//! The `record!` macro: declares a plain jute record struct whose fields are encoded in order.
//!
//! Field encodings follow the Rust type: `i32`/`i64`/`bool` as themselves, `String` as a `ustring`
//! (null read as empty), `Option<Vec<u8>>` as a nullable `buffer`, `Vec<u8>` as a `buffer` (null read as
//! empty), `Vec<T>` of records as a `vector` (null read as empty), and nested records. `Option<bool>` is an
//! optional trailing `boolean`, so it may only be the last field: written when `Some`, read as `None` when the
//! frame has ended.

use crate::jute::{
    put_bool, put_buffer, put_i32, put_i64, put_str, put_trailing_bool, put_vec, Decode, Encode, Reader,
};
use crate::DecodeError;

/// One field of a record (crate-internal glue for `record!`).
pub trait Field: Sized {
    /// Appends the field.
    fn put(&self, w: &mut Vec<u8>);
    /// Reads the field.
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// `Field` for the scalar types, each through its jute writer and reader.
macro_rules! scalar_fields {
    ($( $ty:ty => $put:ident, $read:ident; )*) => {
        $(
            impl Field for $ty {
                fn put(&self, w: &mut Vec<u8>) {
                    $put(w, *self)
                }
                fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                    r.$read()
                }
            }
        )*
    };
}

scalar_fields! {
    i32 => put_i32, read_i32;
    i64 => put_i64, read_i64;
    bool => put_bool, read_bool;
    Option<bool> => put_trailing_bool, read_trailing_bool;
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
