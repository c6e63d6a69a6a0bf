//! A [`Snapshot`] as people read it (a table per context) and as tools read it (JSON, its
//! shape documented in docs/debugging.md). The JSON is written here rather than through a
//! serialiser crate: a dozen fields of numbers and strings, and the runtime stays lean.

use super::{ContextView, Profile, QueueView, Snapshot, ThreadView};
use crate::{ExecMode, SchedMode};
use dpakit_abi::device::DEVICE_API;
use std::fmt::Write;

impl Snapshot {
    /// The table `cargo xtask dpa-top` and `DPAKIT_SOFT_STATS=1` print.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let n = self.contexts.len();
        let _ = writeln!(
            out,
            "dpakit soft device, process {}: {n} DPA context{}",
            self.pid,
            if n == 1 { "" } else { "s" }
        );
        for c in &self.contexts {
            c.table(&mut out);
        }
        if self.contexts_forgotten > 0 {
            let _ = writeln!(
                out,
                "({} older destroyed contexts not kept)",
                self.contexts_forgotten
            );
        }
        out
    }

    /// The same as one JSON object.
    pub fn json(&self) -> String {
        let mut out = String::new();
        let _ = write!(out, "{{\"pid\":{},\"contexts\":[", self.pid);
        for (i, c) in self.contexts.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            c.json(&mut out);
        }
        let _ = write!(
            out,
            "],\"contexts_forgotten\":{}}}",
            self.contexts_forgotten
        );
        out
    }
}

fn exec_name(exec: ExecMode) -> &'static str {
    match exec {
        ExecMode::Native => "native",
        ExecMode::Isa => "isa",
    }
}

fn sched_name(sched: SchedMode) -> (&'static str, Option<u64>) {
    match sched {
        SchedMode::BusyPoll => ("busy_poll", None),
        SchedMode::Sleep => ("sleep", None),
        SchedMode::Deterministic { seed } => ("deterministic", Some(seed)),
    }
}

impl ContextView {
    fn table(&self, out: &mut String) {
        let (sched, seed) = sched_name(self.sched);
        let seed = seed.map(|s| format!(" (seed {s})")).unwrap_or_default();
        let exec = match &self.image {
            Some(image) => format!("ISA mode, {image}"),
            None => "native".to_string(),
        };
        let gone = if self.destroyed { ", destroyed" } else { "" };
        let _ = writeln!(
            out,
            "\nDPA context {}: app {}, {}{gone}, {exec}, {sched}{seed}",
            self.id, self.app, self.state
        );
        if let Some(error) = &self.error {
            let _ = writeln!(out, "  error: {error}");
        }
        let width = self
            .threads
            .iter()
            .map(|t| t.kernel.chars().count())
            .max()
            .unwrap_or(0)
            .max("kernel".len());
        let _ = writeln!(
            out,
            "  {:>6}  {:<width$}  {:<18}  {:>11}  {:>12}  {:>12}",
            "thread", "kernel", "state", "activations", "instructions", "device calls"
        );
        for t in &self.threads {
            let state = if t.destroyed {
                format!("{}, destroyed", t.status.name())
            } else {
                t.status.name().to_string()
            };
            let (instructions, calls) = match &t.isa {
                Some(p) => (p.instructions.to_string(), p.device_calls().to_string()),
                None => ("-".to_string(), "-".to_string()),
            };
            let _ = writeln!(
                out,
                "  {:>6}  {:<width$}  {state:<18}  {:>11}  {instructions:>12}  {calls:>12}",
                t.index, t.kernel, t.activations
            );
        }
        if self.threads_forgotten > 0 {
            let _ = writeln!(
                out,
                "  ({} older destroyed threads not kept)",
                self.threads_forgotten
            );
        }
        if !self.queues.is_empty() {
            let _ = writeln!(
                out,
                "  {:>6}  {:<9}  {:>9}  {:>9}  {:>10}  {:>10}  {:>7}",
                "MsgQ", "direction", "consumers", "producers", "sent", "taken", "credits"
            );
        }
        for q in &self.queues {
            let gone = if q.destroyed { "  destroyed" } else { "" };
            let _ = writeln!(
                out,
                "  {:>6}  {:<9}  {:>9}  {:>9}  {:>10}  {:>10}  {:>7}{gone}",
                q.id,
                if q.to_dpa { "to DPA" } else { "from DPA" },
                q.consumers,
                q.producers,
                q.sent,
                q.taken,
                q.credits
            );
        }
        for (what, profile) in [("RPCs", &self.rpcs), ("kernel launches", &self.launches)] {
            if let Some(p) = profile.as_ref().filter(|p| p.activations > 0) {
                let _ = writeln!(
                    out,
                    "  {what}: {} run, {} instructions, {} device calls",
                    p.activations,
                    p.instructions,
                    p.device_calls()
                );
            }
        }
    }

    fn json(&self, out: &mut String) {
        let (sched, seed) = sched_name(self.sched);
        let _ = write!(out, "{{\"id\":{},\"app\":", self.id);
        string(out, self.app);
        let _ = write!(
            out,
            ",\"state\":\"{}\",\"exec\":\"{}\",\"sched\":\"{sched}\",\"seed\":",
            self.state,
            exec_name(self.exec)
        );
        option(out, seed.as_ref(), |out, s| {
            let _ = write!(out, "{s}");
        });
        out.push_str(",\"image\":");
        option(out, self.image.as_deref(), string);
        out.push_str(",\"error\":");
        option(out, self.error.as_deref(), string);
        let _ = write!(out, ",\"destroyed\":{},\"threads\":[", self.destroyed);
        for (i, t) in self.threads.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            t.json(out);
        }
        let _ = write!(
            out,
            "],\"threads_forgotten\":{},\"rpcs\":",
            self.threads_forgotten
        );
        option(out, self.rpcs.as_ref(), profile);
        out.push_str(",\"launches\":");
        option(out, self.launches.as_ref(), profile);
        out.push_str(",\"queues\":[");
        for (i, q) in self.queues.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            q.json(out);
        }
        out.push_str("]}");
    }
}

impl ThreadView {
    fn json(&self, out: &mut String) {
        let _ = write!(out, "{{\"index\":{},\"kernel\":", self.index);
        string(out, &self.kernel);
        let _ = write!(
            out,
            ",\"state\":\"{}\",\"activations\":{},\"destroyed\":{},\"isa\":",
            self.status.name(),
            self.activations,
            self.destroyed
        );
        option(out, self.isa.as_ref(), profile);
        out.push('}');
    }
}

impl QueueView {
    fn json(&self, out: &mut String) {
        let _ = write!(
            out,
            "{{\"id\":{},\"direction\":\"{}\",\"consumers\":{},\"producers\":{},\"sent\":{},\
             \"taken\":{},\"credits\":{},\"destroyed\":{}}}",
            self.id,
            if self.to_dpa { "to_dpa" } else { "from_dpa" },
            self.consumers,
            self.producers,
            self.sent,
            self.taken,
            self.credits,
            self.destroyed
        );
    }
}

/// The counts, with device calls by function name (those made at least once).
fn profile(out: &mut String, p: &Profile) {
    let _ = write!(
        out,
        "{{\"activations\":{},\"instructions\":{},\"max_instructions\":{},\"device_calls\":{{",
        p.activations, p.instructions, p.max_instructions
    );
    let made = DEVICE_API.iter().zip(&p.calls).filter(|(_, n)| **n > 0);
    for (i, (name, n)) in made.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{name}\":{n}");
    }
    out.push_str("}}");
}

fn option<T: ?Sized>(out: &mut String, value: Option<&T>, f: impl FnOnce(&mut String, &T)) {
    match value {
        Some(v) => f(out, v),
        None => out.push_str("null"),
    }
}

/// `s` as a JSON string: quotes, backslashes and control characters escaped.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_what_json_requires() {
        let mut out = String::new();
        string(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(out, r#""a\"b\\c\nd\u0001é""#);
    }
}
