//! `cargo xtask dpa-top`: what the DPA contexts of running programs are doing, from the live
//! view's socket each program serves (`dpakit_wire::stats`; docs/debugging.md).

use crate::Result;
use dpakit_wire::stats::{self, Request};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// How long one program may take to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub struct Options {
    pid: Option<u32>,
    json: bool,
    once: bool,
    interval: Option<Duration>,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut opts = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--pid" => {
                    let pid = args.next().and_then(|p| p.parse().ok());
                    opts.pid = Some(pid.ok_or("dpa-top: --pid takes a process id")?);
                }
                "--json" => opts.json = true,
                "--once" => opts.once = true,
                "--interval" => {
                    let ms = args
                        .next()
                        .and_then(|p| p.parse().ok())
                        .filter(|&ms| ms > 0);
                    let ms = ms.ok_or("dpa-top: --interval takes milliseconds (at least 1)")?;
                    opts.interval = Some(Duration::from_millis(ms));
                }
                other => return Err(format!("dpa-top: unknown option `{other}`")),
            }
        }
        // JSON is for tools: once, unless they ask for one object per interval.
        opts.once |= opts.json && opts.interval.is_none();
        Ok(opts)
    }
}

pub fn run(opts: &Options) -> Result {
    let request = if opts.json {
        Request::Json
    } else {
        Request::Table
    };
    let interval = opts.interval.unwrap_or(Duration::from_secs(1));
    loop {
        let views = views(opts.pid, request)?;
        let mut out = std::io::stdout().lock();
        if !opts.once && !opts.json {
            // Home and clear: the screen refreshes in place.
            let _ = write!(out, "\x1b[H\x1b[2J");
        }
        if views.is_empty() {
            let dir = dpakit_wire::runtime_dir().map_err(|e| e.to_string())?;
            let none = format!(
                "no running program has a DPA context (live views are served in {})",
                dir.display()
            );
            if opts.once {
                return Err(none);
            }
            let _ = writeln!(out, "{none}; waiting");
        }
        for (pid, answer) in &views {
            match answer {
                Ok(view) => {
                    let _ = write!(out, "{view}");
                    if !view.ends_with('\n') {
                        let _ = writeln!(out);
                    }
                }
                Err(e) => {
                    let _ = writeln!(out, "process {pid}: {e}");
                }
            }
        }
        let _ = out.flush();
        if opts.once {
            return match views.iter().find_map(|(_, a)| a.as_ref().err()) {
                Some(e) if opts.pid.is_some() => Err(e.clone()),
                _ => Ok(()),
            };
        }
        if opts.pid.is_some() && views.iter().all(|(_, a)| a.is_err()) {
            return Err("the program has ended".to_string());
        }
        std::thread::sleep(interval);
    }
}

/// Each program's answer (or why there is none), by pid.
fn views(pid: Option<u32>, request: Request) -> Result<Vec<(u32, Result<String>)>> {
    let servers: Vec<(u32, PathBuf)> = match pid {
        Some(pid) => vec![(pid, stats::socket_path(pid).map_err(|e| e.to_string())?)],
        None => stats::servers().map_err(|e| e.to_string())?,
    };
    Ok(servers
        .into_iter()
        .map(|(pid, path)| {
            let answer = stats::query(&path, request, ANSWER_TIMEOUT)
                .map_err(|e| format!("no live view from process {pid} ({}): {e}", path.display()));
            (pid, answer)
        })
        .collect())
}

/// What `cargo xtask test` checks of the live view: while the quickstart (`program`, built)
/// runs its echo in ISA mode, `dpa-top` shows its echo thread and its MsgQs; the quickstart
/// then exits 0 and takes its socket with it.
pub fn check_against(program: &std::path::Path) -> Result {
    use std::process::{Command, Stdio};
    use std::time::Instant;
    let mut child = Command::new(program)
        .arg("--isa")
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::from("nothing");
    let shown = loop {
        if let Some((_, Ok(view))) = views(Some(pid), Request::Table)?.pop() {
            let echo = view
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some("echo"));
            if echo && view.contains("to DPA") && view.contains("from DPA") {
                break Some(view);
            }
            last = view;
        }
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let status = child.wait().map_err(|e| e.to_string())?;
    let Some(view) = shown else {
        return Err(format!(
            "dpa-top never showed the quickstart's echo thread and MsgQs; it last showed:\n{last}"
        ));
    };
    print!("dpa-top on the running quickstart:\n{view}");
    if !status.success() {
        return Err(format!("the quickstart failed under dpa-top ({status})"));
    }
    let socket = stats::socket_path(pid).map_err(|e| e.to_string())?;
    if socket.exists() {
        return Err(format!(
            "the quickstart left its live view's socket {}",
            socket.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "runs the quickstart (built by cargo test --workspace): cargo xtask test runs it"]
    fn dpa_top_stage() {
        let quickstart = crate::workspace_root().join("target/debug/examples/quickstart");
        check_against(&quickstart).unwrap();
    }

    #[test]
    fn options_parse() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = Options::parse(&args(&["--pid", "42", "--json"])).unwrap();
        assert_eq!((o.pid, o.json, o.once), (Some(42), true, true));
        let o = Options::parse(&args(&["--json", "--interval", "500"])).unwrap();
        assert_eq!(
            (o.once, o.interval),
            (false, Some(Duration::from_millis(500)))
        );
        assert!(Options::parse(&args(&["--pid"])).is_err());
        assert!(Options::parse(&args(&["--interval", "0"])).is_err());
        assert!(Options::parse(&args(&["--top"])).is_err());
    }
}
