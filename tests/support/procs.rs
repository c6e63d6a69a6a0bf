//! Tests that run the test binary itself as child processes in roles (chosen by environment),
//! which report what happens as `EV <CLOCK_MONOTONIC ns> <text>` lines on stdout.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn ev(text: std::fmt::Arguments<'_>) {
    println!("EV {} {text}", now_ns());
}

pub fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

pub fn var_u64(name: &str, default: u64) -> u64 {
    var(name).parse().unwrap_or(default)
}

/// A child process in a role, with its event lines.
pub struct Proc {
    pub child: Child,
    pub events: mpsc::Receiver<(u64, String)>,
}

impl Proc {
    pub fn spawn(dir: &Path, role: &str, env: &[(&str, String)]) -> Proc {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "role", "--nocapture", "--test-threads=1", "-q"])
            .env("DPAKIT_ROLE", role)
            .env("DPAKIT_SOFT_RUNTIME_DIR", dir)
            .stdout(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let out: ChildStdout = child.stdout.take().unwrap();
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let mut parts = line.splitn(3, ' ');
                if parts.next() == Some("EV") {
                    let at = parts.next().and_then(|t| t.parse().ok()).unwrap_or(0);
                    let _ = tx.send((at, parts.next().unwrap_or("").to_string()));
                }
            }
        });
        Proc { child, events }
    }

    /// The next event starting with `prefix` within `timeout`, with its time stamp.
    pub fn expect(&self, prefix: &str, timeout: Duration) -> (u64, String) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok((at, text)) if text.starts_with(prefix) => return (at, text),
                Ok(_) => {}
                Err(_) => panic!("no `{prefix}` event within {timeout:?}"),
            }
        }
    }

    pub fn kill9(&mut self) -> u64 {
        let at = now_ns();
        // SAFETY: signals our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.wait();
        at
    }

    pub fn wait_ok(mut self) {
        let status = self.child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh runtime directory for one test.
pub fn runtime_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dpakit-procs-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The runtime directory this process's soft device uses, as the soft device chooses it
/// (wire/src/runtime.rs): children started with it find the same servers.
pub fn shared_runtime_dir() -> PathBuf {
    let set = |v: &str| std::env::var_os(v).filter(|d| !d.is_empty());
    if let Some(d) = set("DPAKIT_SOFT_RUNTIME_DIR") {
        return d.into();
    }
    if let Some(d) = set("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("dpakit-soft");
    }
    // SAFETY: getuid cannot fail.
    PathBuf::from(format!("/tmp/dpakit-soft-{}", unsafe { libc::getuid() }))
}

/// Resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Descriptors process `pid` has open.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// CPU time process `pid` has used so far (user and system), in seconds, at the kernel's tick.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command (in parentheses, which may hold spaces): utime is the 12th
    // and stime the 13th of them.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    ticks as f64 / hz as f64
}
