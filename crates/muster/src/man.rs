//! `muster man DIR` and `muster completions SHELL`: man pages and shell
//! completions, generated from the definitions the parsers use, so they
//! cannot drift from what is accepted.
//!
//! muster's own subcommands come from clap ([`crate::args::Cli`]): one page
//! each (`muster.1`, `muster-up.1`, ...). The Slurm commands keep their
//! getopt tables (`cli::options`); their pages (`sbatch.1`, ...) list the
//! options muster's parser accepts and point to Slurm's pages for what
//! each does.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// Writes every page into `dir` (created if missing); returns the files.
pub fn write_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(crate::args::command(), dir)
        .with_context(|| format!("writing man pages into {}", dir.display()))?;
    for name in cli::COMMANDS {
        let cmd = slurm_command(name).expect("every command has an option table");
        clap_mangen::Man::new(cmd)
            .section("1")
            .manual("muster")
            .generate_to(dir)
            .with_context(|| format!("writing {name}.1 into {}", dir.display()))?;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .collect();
    files.sort();
    Ok(files)
}

/// A clap description of Slurm command `name`'s options, from its getopt
/// table, for its man page (never for parsing: the command parses with
/// `cli::getopt`, as Slurm's getopt_long does).
pub fn slurm_command(name: &'static str) -> Option<clap::Command> {
    let specs = cli::options(name)?;
    let about = format!(
        "the Slurm command, as muster serves it (Slurm {})",
        cli::common::SLURM_VERSION
    );
    let long_about = format!(
        "muster's {name} accepts the options below with the meaning Slurm {v} gives them: \
         see Slurm's {name}(1) for what each does. docs/compatibility.md says which options \
         are implemented, which are warned about and which are refused. Long options may be \
         abbreviated to a unique prefix and short ones bundled, as with GNU getopt_long. \
         `{name} --version` prints `slurm {v}`.",
        v = cli::common::SLURM_VERSION
    );
    let mut cmd = clap::Command::new(name)
        .about(about)
        .long_about(long_about)
        .version(cli::common::SLURM_VERSION)
        .disable_help_flag(true)
        .disable_version_flag(true);
    for spec in specs {
        let mut arg = clap::Arg::new(spec.long).long(spec.long);
        if let Some(c) = spec.short {
            arg = arg.short(c);
        }
        // What muster does with it, where a table decides (`cli::compat`).
        if cli::compat::COMMANDS.contains(&name) {
            match cli::compat::disposition(name, spec.long) {
                cli::compat::Disposition::Implemented => {}
                cli::compat::Disposition::Warn(why) => {
                    arg = arg.help(format!("ignored here, with a warning: {why}"));
                }
                cli::compat::Disposition::Refuse(why) => {
                    arg = arg.help(format!("refused here: {why}"));
                }
            }
        }
        arg = match spec.arg {
            cli::getopt::Arg::None => arg.action(clap::ArgAction::SetTrue),
            cli::getopt::Arg::Required => arg
                .num_args(1)
                .value_name(spec.long.to_ascii_uppercase().replace('-', "_")),
            cli::getopt::Arg::Optional => arg
                .num_args(0..=1)
                .require_equals(true)
                .value_name(spec.long.to_ascii_uppercase().replace('-', "_")),
        };
        cmd = cmd.arg(arg);
    }
    Some(cmd)
}

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = crate::args::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "muster", &mut out);
    out
}

#[cfg(test)]
mod tests;
