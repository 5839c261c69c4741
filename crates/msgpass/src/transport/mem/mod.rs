//! Memory a peer process can write: the rules for reading it
//! (`shared`) and the windows the in-place API lends (`window`). Imports nothing of the
//! other layers.

pub(crate) mod shared;
pub(crate) mod window;
