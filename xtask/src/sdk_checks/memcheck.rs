//! Running a program under valgrind's memcheck. Every C program and Comch pair `cargo xtask test`
//! runs is run once this way, and passes only with no memcheck error: no invalid read or write,
//! no use of uninitialised memory, no leak definitely or possibly lost.

use std::path::Path;
use std::process::Command;

/// How memcheck runs a program:
/// - `--fair-sched=yes`: the soft device's progress loops and busy DPA workers spin, and under
///   valgrind's default lock a spinning thread can keep the others from ever running;
/// - `--trace-children=yes`: programs that run copies of themselves (peers, children) are
///   checked in every process;
/// - `--error-exitcode`: any error fails the run, whatever the program's own status.
pub const FLAGS: &[&str] = &[
    "--quiet",
    "--fair-sched=yes",
    "--trace-children=yes",
    "--error-exitcode=99",
    "--leak-check=full",
    "--errors-for-leak-kinds=definite,possible",
];

/// How a program of the checks runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Native,
    Memcheck,
}

impl Mode {
    /// The command that runs `program` in this mode. Under memcheck DPA workers sleep until
    /// notified rather than poll: the same kernels and paths, without a thread spinning on
    /// valgrind's one-thread-at-a-time lock.
    pub fn command(self, program: &Path) -> Command {
        match self {
            Mode::Native => Command::new(program),
            Mode::Memcheck => {
                let mut cmd = Command::new("valgrind");
                cmd.args(FLAGS)
                    .arg(program)
                    .env("DPAKIT_SOFT_SCHED", "sleep");
                cmd
            }
        }
    }

    /// How the command line reads in the log.
    pub fn prefix(self) -> String {
        match self {
            Mode::Native => String::new(),
            Mode::Memcheck => format!("valgrind {} ", FLAGS.join(" ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcheck_fails_on_any_error_and_follows_children() {
        let cmd = Mode::Memcheck.command(Path::new("/bin/prog"));
        assert_eq!(cmd.get_program(), "valgrind");
        let args: Vec<_> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args.last().map(String::as_str), Some("/bin/prog"));
        for flag in [
            "--error-exitcode=99",
            "--trace-children=yes",
            "--leak-check=full",
        ] {
            assert!(args.iter().any(|a| a == flag), "{flag} in {args:?}");
        }
        assert_eq!(
            Mode::Native.command(Path::new("/bin/prog")).get_program(),
            "/bin/prog"
        );
    }
}
