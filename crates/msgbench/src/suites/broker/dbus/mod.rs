//! TEMPORARY shim until the D-Bus side lands (branch dbus).
use anyhow::Result;

/// value
pub fn value(num_ints: u32, i: u32) -> i32 {
    (num_ints as i32)
        .wrapping_mul(31)
        .wrapping_add((i as i32).wrapping_mul(7))
}
/// check
pub fn check(num_ints: u32, got: &[i32]) -> Result<(), String> {
    if got.len() != num_ints as usize {
        return Err(format!("{} ints, expected {num_ints}", got.len()));
    }
    for (i, v) in got.iter().enumerate() {
        if *v != value(num_ints, i as u32) {
            return Err(format!("int {i} is {v}"));
        }
    }
    Ok(())
}
/// encode_request
pub fn encode_request(num_ints: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&(num_ints as i32).to_le_bytes());
}
/// encode_reply
pub fn encode_reply(num_ints: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&(num_ints * 4).to_le_bytes());
    for i in 0..num_ints {
        out.extend_from_slice(&value(num_ints, i).to_le_bytes());
    }
}
/// decode_reply
pub fn decode_reply(body: &[u8], num_ints: u32) -> Result<(), String> {
    let n = u32::from_le_bytes(body.get(..4).ok_or("short")?.try_into().unwrap());
    if n != num_ints * 4 || body.len() != 4 + n as usize {
        return Err("bad length".into());
    }
    for (i, c) in body[4..].chunks_exact(4).enumerate() {
        if i32::from_le_bytes(c.try_into().unwrap()) != value(num_ints, i as u32) {
            return Err(format!("int {i}"));
        }
    }
    Ok(())
}
/// validate_request_body
pub fn validate_request_body(body: &[u8]) -> Result<i32> {
    Ok(i32::from_le_bytes(body.try_into()?))
}
/// validate_reply_body
pub fn validate_reply_body(body: &[u8]) -> Result<usize> {
    Ok(body.len() / 4 - 1)
}
/// Target
pub enum Target {
    /// bus
    Bus(String),
    /// p2p
    P2p(std::path::PathBuf),
}
/// client
pub struct DbusClient;
impl DbusClient {
    /// connect
    pub fn connect(_t: &Target, _i: u32) -> Result<DbusClient> {
        anyhow::bail!("not yet")
    }
    /// call
    pub fn get_integer(&mut self, _n: u32) -> Result<Vec<i32>> {
        anyhow::bail!("not yet")
    }
}
/// serve
pub fn serve(_t: &Target, _i: u32, _s: &std::sync::atomic::AtomicBool) -> Result<()> {
    anyhow::bail!("not yet")
}
/// kind
#[derive(Debug, Clone, Copy)]
pub enum DaemonKind {
    /// a
    DbusDaemon,
    /// b
    DbusBroker,
}
impl DaemonKind {
    /// avail
    pub fn available(self) -> Result<(), String> {
        Err("shim".into())
    }
}
/// bus
pub struct PrivateBus;
impl PrivateBus {
    /// start
    pub fn start(_k: DaemonKind, _d: &std::path::Path) -> Result<PrivateBus> {
        anyhow::bail!("shim")
    }
    /// addr
    pub fn address(&self) -> &str {
        ""
    }
    /// pids
    pub fn pids(&self) -> Vec<i32> {
        vec![]
    }
    /// stop
    pub fn stop(self) -> Result<()> {
        Ok(())
    }
}
/// cost
pub struct MarshalCost {
    /// r
    pub request_ns: f64,
    /// r
    pub reply_ns: f64,
}
/// cost
pub fn marshal_cost(_n: u32, _i: u32) -> Result<MarshalCost> {
    anyhow::bail!("shim")
}
