//! Pieces shared by the benchmarks and the measuring examples, included with
//! `#[path = "support/mod.rs"] mod support;` (or `"../benches/support/mod.rs"` from examples).
//!
//! - [`cores`]: which core the host side and the responder run on;
//! - [`echo`]: one-message-at-a-time round-trip partners behind the [`Echo`] trait — dpakit's
//!   echo kernel ([`DpakitEcho`]) and the peers it is compared with (raw cache-line
//!   [`PingPong`], crossbeam, rtrb, std mpsc, a Unix socket, Mutex+Condvar);
//! - [`sink`]: one-way consumers for throughput (dpakit's sink kernel, rtrb, crossbeam);
//! - [`config`]: the Criterion defaults every bench starts from (command-line flags override
//!   them).
// Each bench and example uses a part of this tree.
#![allow(dead_code, unused_imports)]

pub mod echo;
pub mod peer;
mod ping_pong;
pub mod sink;
pub mod sync;

pub use echo::{
    CondvarEcho, CrossbeamEcho, DpakitEcho, Echo, MpscEcho, RtrbEcho, UnixEcho, warm_up,
};
pub use ping_pong::PingPong;

use dpakit::dpa::Dpa;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{kit_app, open_dpa_dev};
use std::time::Duration;

/// How long any single reply may take before a benchmark gives up.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The host side runs on the first core, the responder (DPA worker or pong thread) on the
/// second. Counted once, before anything is pinned (pinning shrinks what
/// `available_parallelism` sees).
pub fn cores() -> (usize, usize) {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let n = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    (0, 1 % n)
}

/// A DPA context running the kit's kernels on one worker pinned to `core`.
pub fn dpa(mode: SchedMode, core: usize) -> Dpa {
    dpa_builder(mode, core).start().expect("DPA start")
}

fn dpa_builder(mode: SchedMode, core: usize) -> dpakit::dpa::DpaBuilder {
    Dpa::builder(&open_dpa_dev().expect("a DPA device"))
        .app(kit_app())
        .sched_mode(mode)
        .workers(1)
        .pin_workers(vec![core])
}

/// As [`dpa`], in ISA mode: the kernels run from the DPA image the kit's app embeds.
pub fn dpa_isa(mode: SchedMode, core: usize) -> Dpa {
    dpa_builder(mode, core)
        .exec_mode(dpakit::soft::ExecMode::Isa)
        .start()
        .expect("DPA start")
}

/// The median of `v` (the upper one of an even count): what the measuring examples report
/// over rounds and batches.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// An `N`-byte message whose bytes all differ from their neighbours.
pub fn payload<const N: usize>() -> [u8; N] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(7).wrapping_add(1))
}

/// The Criterion every bench starts from: modest times, so a full run of a bench takes a minute
/// or two. `criterion_group!` applies the command line (`--warm-up-time`, `--measurement-time`,
/// `--sample-size`, filters) after this, so the runner's quick mode overrides it; benches set
/// none of these on their groups, where they would win over the command line.
pub fn config() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_millis(2500))
}

/// Benchmarks one subject of a figure as `<group>/<name>`. The subject is started only if the
/// filter selects it (so `cargo bench -- rtt/busy_32B` starts nothing else), measured with
/// `run(&mut subject, iters)` (which returns the time of `iters` iterations, setup excluded),
/// and dropped — its responder thread joined, its DPA stopped — before the next subject starts,
/// so no spinning responder competes with the next measurement.
pub fn bench_subject<S>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    start: impl FnOnce() -> S,
    mut run: impl FnMut(&mut S, u64) -> Duration,
) {
    let mut start = Some(start);
    let mut subject = None;
    group.bench_function(name, |b| {
        let s = subject.get_or_insert_with(|| (start.take().expect("started once"))());
        b.iter_custom(|iters| run(s, iters));
    });
    drop(subject);
}
