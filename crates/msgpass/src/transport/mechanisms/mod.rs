//! The byte movers: each transport's own part (how a connection is made,
//! how one message moves, how the peer is woken and named, its limits),
//! on top of `serve`, `wire`, `mem` and `clock`.

pub mod eventfd;
pub mod fifo;
pub mod fuse;
pub(crate) mod fuse_queue;
pub mod io_uring;
pub mod pipe;
pub mod posix_mq;
pub mod shm;
pub mod signal;
pub mod sysv_msg;
pub mod tcp;
pub mod udp;
pub mod uds;
pub mod uds_pair;
