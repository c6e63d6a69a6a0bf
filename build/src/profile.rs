//! The ISA profile: instructions per message of each kernel, counted by the soft device's
//! interpreter running the image a build just linked. A program of the workspace measures them
//! (for the kit, its `isa_profile` example) and prints them as JSON.

use crate::{Error, ErrorKind, Result};
use serde_json::Value;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Runs `cargo <args> <image>` in `workspace`; returns the JSON array its last line holds.
pub fn measure(workspace: &Path, args: &[OsString], image: &Path) -> Result<Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(args).arg(image).current_dir(workspace);
    let shown = format!("{cargo} {}", shown(args));
    let out = cmd
        .output()
        .map_err(|e| Error::new(ErrorKind::Profile, format!("cannot run `{shown}`: {e}")))?;
    if !out.status.success() {
        return Err(Error::new(
            ErrorKind::Profile,
            format!(
                "`{shown} {}` failed ({}):\n{}",
                image.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let value: Value = serde_json::from_str(line).map_err(|e| {
        Error::new(
            ErrorKind::Profile,
            format!("`{shown}` printed no JSON as its last line ({e}): {stdout}"),
        )
    })?;
    if !value.is_array() {
        return Err(Error::new(
            ErrorKind::Profile,
            format!("`{shown}` printed {value}, not an array of kernels"),
        ));
    }
    Ok(value)
}

fn shown(args: &[OsString]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The figures as a table for the terminal.
pub fn table(profile: &Value) -> String {
    let mut out = String::from(
        "instructions per message (ISA mode; device calls are DOCA's, counted apart):\n",
    );
    let _ = writeln!(
        out,
        "  {:<16} {:>13} {:>13}  workload",
        "kernel", "instr/msg", "calls/msg"
    );
    for row in profile.as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {:<16} {:>13.1} {:>13.2}  {}",
            row["kernel"].as_str().unwrap_or("?"),
            row["instructions_per_message"].as_f64().unwrap_or(0.0),
            row["device_calls_per_message"].as_f64().unwrap_or(0.0),
            row["workload"].as_str().unwrap_or("")
        );
    }
    out
}
