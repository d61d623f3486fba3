//! client (being written).
