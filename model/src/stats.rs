//! The live view and the dump at exit: what the DPA contexts of the process are doing
//! ([`dpakit_dpa_runtime::view`], with the MsgQs the model reports), served to tools at the
//! live view's socket ([`dpakit_wire::stats`]) and printed when the process exits, as
//! `DPAKIT_SOFT_STATS` asks:
//!
//! | `DPAKIT_SOFT_STATS` | live view | at exit |
//! |---|---|---|
//! | unset | served | nothing |
//! | `0`, `off` | not served | nothing |
//! | `1`, `table` | served | the table, on standard error |
//! | `json` | served | the JSON, on standard error |
//! | `json:PATH` | served | the JSON, written to `PATH` |
//!
//! Both start with the process's first DPA context.

use dpakit_dpa_runtime::view;
use dpakit_wire::stats::Request;
use std::path::PathBuf;
use std::sync::OnceLock;

/// What the process does at exit.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Dump {
    None,
    Table,
    Json,
    JsonTo(PathBuf),
}

/// What `DPAKIT_SOFT_STATS` asks: whether to serve the live view, and what to dump at exit.
fn from_env() -> (bool, Dump) {
    let Some(value) = std::env::var_os("DPAKIT_SOFT_STATS") else {
        return (true, Dump::None);
    };
    let value = value.to_string_lossy();
    match &*value {
        "" => (true, Dump::None),
        "0" | "off" => (false, Dump::None),
        "1" | "table" => (true, Dump::Table),
        "json" => (true, Dump::Json),
        v => match v.strip_prefix("json:") {
            Some(path) if !path.is_empty() => (true, Dump::JsonTo(PathBuf::from(path))),
            _ => {
                eprintln!(
                    "dpakit soft device: DPAKIT_SOFT_STATS={v} is not one of 0, off, 1, \
                     table, json or json:PATH; nothing is dumped at exit"
                );
                (true, Dump::None)
            }
        },
    }
}

static DUMP: OnceLock<Dump> = OnceLock::new();

/// A DPA context is being made: the first one starts the live view and arranges the dump.
pub(crate) fn context_made() {
    // Miri models neither sockets nor exit handlers.
    if cfg!(miri) || DUMP.get().is_some() {
        return;
    }
    let (live, dump) = from_env();
    let wanted = dump != Dump::None;
    if DUMP.set(dump).is_err() {
        return;
    }
    if live {
        // The view is a convenience: a program runs on without it (a runtime directory it may
        // not use fails its Comch servers with the reason already).
        if let Err(e) = dpakit_wire::stats::serve(render) {
            if wanted {
                eprintln!("dpakit soft device: the live view is not served: {e}");
            }
        }
    }
    if live || wanted {
        // SAFETY: `at_exit` is a plain function that stays valid for the life of the process.
        unsafe { libc::atexit(at_exit) };
    }
}

/// The view a tool asked for.
fn render(request: Request) -> String {
    let snapshot = view::snapshot();
    match request {
        Request::Table => snapshot.table(),
        Request::Json => snapshot.json(),
    }
}

/// At exit: the dump `DPAKIT_SOFT_STATS` asked for, and the live view's socket removed.
extern "C" fn at_exit() {
    // Nothing may unwind out of an exit handler.
    let _ = std::panic::catch_unwind(|| {
        dump();
        dpakit_wire::stats::withdraw();
    });
}

fn dump() {
    let dump = DUMP.get().unwrap_or(&Dump::None);
    match dump {
        Dump::None => {}
        Dump::Table => eprint!("{}", render(Request::Table)),
        Dump::Json => eprintln!("{}", render(Request::Json)),
        Dump::JsonTo(path) => {
            if let Err(e) = std::fs::write(path, render(Request::Json) + "\n") {
                eprintln!(
                    "dpakit soft device: cannot write the stats (DPAKIT_SOFT_STATS) to {}: {e}",
                    path.display()
                );
            }
        }
    }
}
