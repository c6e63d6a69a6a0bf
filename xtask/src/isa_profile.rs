//! `cargo xtask build-dpa --profile`: the cost model of the kit's kernels — instructions per
//! message counted by the soft device's interpreter running the image build-dpa just linked —
//! into report.json and the table.

use crate::{Result, workspace_root};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Messages each kernel is measured over.
const MESSAGES: &str = "1000";

/// Runs the `isa_profile` example against `image`; returns its figures (a JSON array, one
/// object per kernel).
pub fn measure(image: &Path) -> Result<Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args([
            "run",
            "--quiet",
            "--release",
            "--example",
            "isa_profile",
            "--",
        ])
        .arg("--json")
        .arg("--image")
        .arg(image)
        .arg(MESSAGES)
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the isa_profile example failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("isa_profile printed no JSON ({e}): {stdout}"))
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
