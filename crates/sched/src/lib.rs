//! sched (being written).
