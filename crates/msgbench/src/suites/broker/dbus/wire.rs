//! The method's bodies in D-Bus wire format (little endian): `i` for the
//! request, `ai` for the reply. The hand encoders and the fast decoder are
//! what the non-D-Bus transports use; the validators decode with zvariant,
//! the maintained library, for the broker's "validate" variant.

use anyhow::{bail, Context as _, Result};
use zbus::zvariant::serialized::{Context, Data};
use zbus::zvariant::Endian;

use super::{value, WrongAnswer};

/// The zvariant context of a body: D-Bus format, little endian, at offset
/// 0 (a body starts 8-aligned in a message, so offsets agree).
fn context() -> Context {
    Context::new_dbus(Endian::Little, 0)
}

/// Appends the request body (`numInts` as a 4-byte LE i32) to `out`.
pub fn encode_request(num_ints: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&(num_ints as i32).to_le_bytes());
}

/// Appends the reply body to `out`: the array's byte length (`4 * n`, u32
/// LE), then the `n` values from [`value`] as i32 LE.
pub fn encode_reply(num_ints: u32, out: &mut Vec<u8>) {
    out.reserve(4 + 4 * num_ints as usize);
    out.extend_from_slice(&num_ints.wrapping_mul(4).to_le_bytes());
    for i in 0..num_ints {
        out.extend_from_slice(&value(num_ints, i).to_le_bytes());
    }
}

/// Decodes a reply body by hand and checks it is exactly the answer to
/// `GetInteger(num_ints)`: the length field and every value. For clients,
/// on every call.
pub fn decode_reply(body: &[u8], num_ints: u32) -> Result<(), WrongAnswer> {
    let want = 4 + 4 * num_ints as usize;
    if body.len() != want {
        return Err(WrongAnswer::Size {
            num_ints,
            got: body.len(),
            want,
        });
    }
    let (len, ints) = body.split_at(4);
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]);
    if len as usize != 4 * num_ints as usize {
        return Err(WrongAnswer::LengthField { num_ints, len });
    }
    for (i, c) in ints.chunks_exact(4).enumerate() {
        let v = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let expected = value(num_ints, i as u32);
        if v != expected {
            return Err(WrongAnswer::Value {
                num_ints,
                index: i,
                got: v,
                want: expected,
            });
        }
    }
    Ok(())
}

/// Decodes a request body (signature `i`) with zvariant; returns numInts.
/// Errors on a short body or trailing bytes.
pub fn validate_request_body(body: &[u8]) -> Result<i32> {
    let data = Data::new(body, context());
    let (v, used): (i32, usize) = data
        .deserialize()
        .context("request body is not a D-Bus `i`")?;
    if used != body.len() {
        bail!("request body has {} bytes after its `i`", body.len() - used);
    }
    Ok(v)
}

/// Decodes a reply body (signature `ai`) with zvariant, every element;
/// returns the number of integers. Errors on a bad length, a short body or
/// trailing bytes.
pub fn validate_reply_body(body: &[u8]) -> Result<usize> {
    let data = Data::new(body, context());
    let (v, used): (Vec<i32>, usize) = data
        .deserialize()
        .context("reply body is not a D-Bus `ai`")?;
    if used != body.len() {
        bail!("reply body has {} bytes after its `ai`", body.len() - used);
    }
    Ok(v.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::broker::dbus::values;
    use proptest::prelude::*;

    fn zvariant_bytes<T: serde::Serialize + zbus::zvariant::Type>(v: &T) -> Vec<u8> {
        zbus::zvariant::to_bytes(context(), v)
            .expect("zvariant encodes")
            .bytes()
            .to_vec()
    }

    #[test]
    fn hand_encoding_matches_zvariant() {
        for n in [0u32, 1, 256, 4096] {
            let mut req = Vec::new();
            encode_request(n, &mut req);
            assert_eq!(req, zvariant_bytes(&(n as i32)), "request n={n}");
            let mut rep = Vec::new();
            encode_reply(n, &mut rep);
            assert_eq!(rep, zvariant_bytes(&values(n)), "reply n={n}");
            assert_eq!(decode_reply(&rep, n), Ok(()));
            assert_eq!(validate_request_body(&req).unwrap(), n as i32);
            assert_eq!(validate_reply_body(&rep).unwrap(), n as usize);
        }
    }

    #[test]
    fn bad_bodies_are_errors() {
        let mut rep = Vec::new();
        encode_reply(256, &mut rep);
        assert!(validate_reply_body(&rep[..rep.len() - 1]).is_err());
        assert!(validate_reply_body(&rep[..3]).is_err());
        assert!(validate_reply_body(&[]).is_err());
        let mut long = rep.clone();
        long.push(0);
        assert!(validate_reply_body(&long).is_err());
        // A length field that is not a multiple of 4, and one past the end.
        assert!(validate_reply_body(&[3, 0, 0, 0, 1, 2, 3]).is_err());
        assert!(validate_reply_body(&[8, 0, 0, 0, 1, 2, 3, 4]).is_err());
        assert!(validate_request_body(&[1, 2, 3]).is_err());
        assert!(validate_request_body(&[1, 2, 3, 4, 5]).is_err());
        assert!(decode_reply(&rep, 255).is_err());
        rep[4 + 4 * 10] ^= 1;
        assert!(decode_reply(&rep, 256)
            .unwrap_err()
            .to_string()
            .contains("integer 10"));
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = validate_request_body(&bytes);
            let _ = validate_reply_body(&bytes);
            let _ = decode_reply(&bytes, 3);
        }
    }
}
