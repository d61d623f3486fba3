//! ctld (being written).
