//! noded (being written).
