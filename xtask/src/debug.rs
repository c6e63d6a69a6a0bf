//! `cargo xtask debug [--example NAME | --bin NAME] [--kernel SYMBOL] [--batch CMD]... [-- ARGS]`:
//! builds the program, runs it in ISA mode waiting for gdb (`DPAKIT_SOFT_GDB` on a free loopback
//! port), and starts `gdb-multiarch` connected to it, with a breakpoint on `SYMBOL` if asked.
//! gdb finds the image by itself (docs/debugging.md). `--batch` runs gdb with those commands and
//! no prompt, as a script or CI would.

use crate::{Result, setup, workspace_root};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// What to debug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `--example NAME` (`true`) or `--bin NAME`.
    pub example: bool,
    pub name: String,
    /// A kernel (any symbol) to break on.
    pub kernel: Option<String>,
    /// gdb commands to run without a prompt.
    pub batch: Vec<String>,
    /// The program's own arguments.
    pub args: Vec<String>,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options> {
        let usage = "debug: expected --example NAME | --bin NAME [--kernel SYMBOL] [--batch CMD]... [-- ARGS]";
        let (ours, theirs) = match args.iter().position(|a| a == "--") {
            Some(i) => (&args[..i], &args[i + 1..]),
            None => (args, &[][..]),
        };
        let mut target = None;
        let mut kernel = None;
        let mut batch = Vec::new();
        let mut it = ours.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or(usage)?.clone();
            match flag.as_str() {
                "--example" if target.is_none() => target = Some((true, value)),
                "--bin" if target.is_none() => target = Some((false, value)),
                "--kernel" => kernel = Some(value),
                "--batch" => batch.push(value),
                _ => return Err(usage.to_string()),
            }
        }
        let (example, name) = target.ok_or(usage)?;
        Ok(Options {
            example,
            name,
            kernel,
            batch,
            args: theirs.to_vec(),
        })
    }
}

pub fn run(opts: &Options) -> Result {
    setup::ensure_debian_packages(&[("gdb-multiarch", "gdb-multiarch")])?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let kind = if opts.example { "--example" } else { "--bin" };
    let built = Command::new(&cargo)
        .args(["build", "--release", kind, &opts.name])
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !built.success() {
        return Err(format!("building {} failed ({built})", opts.name));
    }
    let mut program_path = workspace_root().join("target").join("release");
    if opts.example {
        program_path.push("examples");
    }
    program_path.push(&opts.name);
    let address = format!(
        "127.0.0.1:{}",
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port()
    );
    let mut program = Command::new(&program_path)
        .args(&opts.args)
        .env("DPAKIT_SOFT_EXEC", "isa")
        .env("DPAKIT_SOFT_GDB", &address)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program_path.display()))?;
    // The program's stderr passes through; gdb starts once the program waits for it.
    let mut stderr = BufReader::new(program.stderr.take().expect("piped"));
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            let status = program.wait().map_err(|e| e.to_string())?;
            return Err(format!(
                "{} ended ({status}) before waiting for gdb: does it start a DPA?",
                opts.name
            ));
        }
        eprint!("{line}");
        if line.contains("waiting for gdb") {
            break;
        }
    }
    let passthrough = std::thread::spawn(move || {
        for line in stderr.lines().map_while(std::result::Result::ok) {
            eprintln!("{line}");
        }
    });
    let mut gdb = Command::new("gdb-multiarch");
    gdb.arg("-q");
    if !opts.batch.is_empty() {
        gdb.args(["-batch", "-nx"]);
    }
    gdb.arg("-ex").arg(format!("target remote {address}"));
    if let Some(kernel) = &opts.kernel {
        gdb.arg("-ex").arg(format!("break {kernel}"));
    }
    for command in &opts.batch {
        gdb.args(["-ex", command]);
    }
    let gdb_status = gdb
        .status()
        .map_err(|e| format!("cannot run gdb-multiarch: {e}"))?;
    let status = program.wait().map_err(|e| e.to_string())?;
    let _ = passthrough.join();
    if !gdb_status.success() {
        return Err(format!("gdb-multiarch failed ({gdb_status})"));
    }
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} ended with {status}", opts.name))
    }
}

#[cfg(test)]
mod tests {
    use super::Options;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_program_the_kernel_and_the_arguments_are_read() {
        let o = parse(&[
            "--example",
            "quickstart",
            "--kernel",
            "echo",
            "--batch",
            "bt",
            "--",
            "--isa",
            "10",
        ])
        .unwrap();
        assert!(o.example);
        assert_eq!(o.name, "quickstart");
        assert_eq!(o.kernel.as_deref(), Some("echo"));
        assert_eq!(o.batch, ["bt"]);
        assert_eq!(o.args, ["--isa", "10"]);
        assert!(parse(&["--kernel", "echo"]).is_err(), "no program");
        assert!(parse(&["--example", "a", "--bin", "b"]).is_err());
        assert!(parse(&["--example"]).is_err());
    }
}
