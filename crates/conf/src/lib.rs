//! conf (being written).
