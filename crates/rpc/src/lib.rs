//! rpc (being written).
