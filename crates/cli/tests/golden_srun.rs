//! `srun --mpi=list` against Slurm 22.05's (`srun_mpi_list.out`, less
//! `cray_shasta`, which muster does not have). With the `pmix` feature it
//! lists pmix and its version line, as Slurm does; without, only what the
//! build serves.

#[test]
fn mpi_list_is_slurms_for_the_plugins_built_in() {
    if cfg!(feature = "pmix") {
        assert_eq!(
            cli::srun::mpi_list(),
            include_str!("golden/srun_mpi_list_pmix.txt")
        );
    } else {
        assert_eq!(
            cli::srun::mpi_list(),
            "MPI plugin types are...\n\tnone\n\tpmi2\n"
        );
    }
}
