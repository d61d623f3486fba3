//! Slurm hostlist expressions (placeholder; being written).
