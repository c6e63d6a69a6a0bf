//! The command-line flags the Comch examples share, as DOCA's programs spell them.

use clap::Arg;

/// `-short/--id VALUE` with a default, shown in `-h` with `help`.
pub fn flag(
    id: &'static str,
    short: char,
    value_name: &'static str,
    default: &'static str,
    help: &'static str,
) -> Arg {
    Arg::new(id)
        .short(short)
        .long(id)
        .value_name(value_name)
        .default_value(default)
        .help(help)
}
