//! The shared secret a remote TCP server asks its clients for
//! ([`Options::token`](crate::Options::token)): 16 random bytes, written
//! as 32 hexadecimal digits where people copy them. A [`Token`] never
//! prints itself: its `Debug` shows `Token(..)`, and only
//! [`Token::to_hex`], called on purpose, gives the digits.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A 16-byte shared secret a remote TCP server asks its clients for
/// ([`Options::token`](crate::Options::token)). Compared in
/// constant time: `==` looks at every byte whatever the first difference.
#[derive(Clone)]
pub struct Token([u8; Token::LEN]);

impl Token {
    /// Bytes in a token.
    pub const LEN: usize = 16;

    /// A fresh token from the kernel's random source.
    pub fn random() -> Result<Token> {
        let mut b = [0u8; Token::LEN];
        oslayer::random::fill(&mut b).map_err(|e| Error::io("make a token (getrandom)", e))?;
        Ok(Token(b))
    }

    /// A token of these bytes.
    pub fn from_bytes(bytes: [u8; Token::LEN]) -> Token {
        Token(bytes)
    }

    /// The token as 32 lower-case hexadecimal digits: what a person copies
    /// to the client's side. Printing it is the caller's decision.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses 32 hexadecimal digits (either case; white space around them
    /// is ignored), as [`to_hex`](Token::to_hex) writes them. The error
    /// never repeats the text, which may be a mistyped secret.
    pub fn from_hex(text: &str) -> Result<Token> {
        let t = text.trim().as_bytes();
        if t.len() != 2 * Token::LEN {
            return Err(Error::BadToken {
                reason: "a token is 32 hexadecimal digits",
            });
        }
        let mut b = [0u8; Token::LEN];
        for (i, pair) in t.chunks_exact(2).enumerate() {
            let (Some(hi), Some(lo)) = (digit(pair[0]), digit(pair[1])) else {
                return Err(Error::BadToken {
                    reason: "a token has only hexadecimal digits (0-9, a-f)",
                });
            };
            b[i] = hi << 4 | lo;
        }
        Ok(Token(b))
    }

    /// True when `other` holds this token's bytes, looking at every byte
    /// whatever the first difference (no early exit a peer could time).
    pub(crate) fn matches(&self, other: &[u8; Token::LEN]) -> bool {
        same(&self.0, other)
    }

    /// The bytes, for the wire.
    pub(crate) fn bytes(&self) -> &[u8; Token::LEN] {
        &self.0
    }
}

/// Refuses a token (`token`, the options' [`Options::token`]) on
/// `transport`, a local one.
///
/// [`Options::token`]: crate::transport::api::Options::token
pub(crate) fn refuse_local(transport: &'static str, token: Option<&Token>) -> Result<()> {
    match token {
        None => Ok(()),
        Some(_) => Err(Error::Unsupported {
            what: "a token (Options::token: only Channel::listen_tcp and \
                   Connection::connect_tcp take one; a local endpoint is guarded by \
                   its namespace's permissions)",
            transport,
        }),
    }
}

/// Compares two tokens' bytes without an early exit.
pub(crate) fn same(a: &[u8; Token::LEN], b: &[u8; Token::LEN]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // Keeps the compiler from turning the fold back into an early exit.
    std::hint::black_box(diff) == 0
}

/// The value of one hexadecimal digit.
fn digit(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

impl PartialEq for Token {
    fn eq(&self, other: &Token) -> bool {
        self.matches(&other.0)
    }
}

impl Eq for Token {}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

impl FromStr for Token {
    type Err = Error;

    fn from_str(s: &str) -> Result<Token> {
        Token::from_hex(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_bad_text_is_refused_without_echo() {
        let t = Token::random().expect("random");
        assert_eq!(Token::from_hex(&t.to_hex()).expect("parses"), t);
        assert_eq!(
            Token::from_hex(&format!(" {}\n", t.to_hex().to_uppercase())).expect("parses"),
            t
        );
        assert_ne!(Token::random().expect("random"), t);
        for bad in ["", "abc", &"g".repeat(32), &"0".repeat(33)] {
            let e = Token::from_hex(bad).expect_err("refused").to_string();
            assert!(e.starts_with("bad token: a token"), "{e}");
            assert!(bad.is_empty() || !e.contains(bad), "{e}");
        }
    }

    #[test]
    fn a_token_never_prints_itself() {
        let t = Token::from_bytes([0xab; Token::LEN]);
        assert_eq!(format!("{t:?}"), "Token(..)");
    }

    #[test]
    fn every_byte_counts() {
        let a = [7u8; Token::LEN];
        for i in 0..Token::LEN {
            let mut b = a;
            b[i] ^= 0x80;
            assert!(!same(&a, &b), "byte {i}");
        }
        assert!(same(&a, &a));
    }
}
