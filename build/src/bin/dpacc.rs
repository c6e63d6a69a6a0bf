//! `dpacc` for the soft SDK (`cargo xtask soft-sdk` installs it as `<prefix>/bin/dpacc`): DOCA's
//! DPA compiler driver, making DPA programs the soft device runs. See `soft_dpacc`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The SDK this dpacc belongs to: DPAKIT_SOFT_SDK, else the parent of its bin/.
    let prefix = std::env::var_os("DPAKIT_SOFT_SDK")
        .map(PathBuf::from)
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.parent()?.to_path_buf())
        })
        .unwrap_or_default();
    match dpakit_build::soft_dpacc::run(&args, &prefix) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
