//! Kernel randomness (`getrandom`). Backed by rustix.

use std::io;

use rustix::rand::GetRandomFlags;

/// Fills `buf` with random bytes from the kernel (blocking only until the
/// pool is first initialised; retried on `EINTR` and short reads).
pub fn fill(buf: &mut [u8]) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        got += crate::retry_rustix(|| {
            rustix::rand::getrandom(&mut buf[got..], GetRandomFlags::empty())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn fills_the_whole_buffer() {
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        super::fill(&mut a).unwrap();
        super::fill(&mut b).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 64]);
    }
}
