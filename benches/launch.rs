//! Running a kernel once: a kernel launch (`doca_dpa_kernel_launch_update_set`) on 1 and on 8
//! threads, waited for on its completion event, beside `doca_dpa_rpc` (the other way DOCA runs
//! a kernel once) and beside spawning and joining as many host threads (what each launched
//! thread costs the soft device at least: every thread of a launch is a host thread).
//!
//! Criterion ids `launch/<threads>/<subject>`, subjects:
//! - `kernel_launch`: `KernelLaunch` of the kit's `LAUNCH_MARK` with its completion event set to
//!   the iteration's number, then this thread polling the event (yielding between polls) until
//!   it shows it; the DPA's workers sleep;
//! - `rpc` (1 thread only): `Dpa::rpc` of the kit's `SYNC_SET`;
//! - `thread_spawn_join`: `std::thread::spawn` of an empty closure per thread, then the joins.
//!
//! `cargo bench --bench launch`

#[path = "support/mod.rs"]
mod support;

use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use dpakit::abi::handles::SyncEventHandle;
use dpakit::dpa::{Dpa, KernelLaunch};
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::sync_event::SyncEvent;
use dpakit::{kernels, kit_app, open_dpa_dev};
use std::hint::black_box;
use std::time::{Duration, Instant};
use support::TIMEOUT;

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// A DPA context with the events a launch uses: `done` (the DPA publishes, the host waits) and
/// `marks` (which the kernel adds to).
struct Launcher {
    done: SyncEvent,
    marks: SyncEvent,
    marks_handle: u64,
    dpa: Dpa,
    seq: u64,
}

impl Launcher {
    fn start() -> Launcher {
        // Sleeping workers: a launch runs on threads of its own, and a busy-polling worker
        // would only take a core from them.
        let dpa = Dpa::builder(&open_dpa_dev().unwrap())
            .app(kit_app())
            .sched_mode(SchedMode::Sleep)
            .workers(1)
            .start()
            .unwrap();
        let dev = dpa.dev().clone();
        let from_dpa = || {
            SyncEvent::builder()
                .publisher_dpa(&dpa)
                .subscriber_cpu(&dev)
                .start()
                .unwrap()
        };
        let (done, marks) = (from_dpa(), from_dpa());
        let marks_handle = marks.dpa_handle(&dpa).unwrap().raw();
        Launcher {
            done,
            marks,
            marks_handle,
            dpa,
            seq: 0,
        }
    }

    /// One launch on `threads` threads, waited for.
    fn launch(&mut self, threads: u32) {
        self.seq += 1;
        KernelLaunch::new(&self.dpa, &kernels::LAUNCH_MARK, self.marks_handle)
            .threads(threads)
            .then_set(&self.done, self.seq)
            .start()
            .unwrap();
        let deadline = Instant::now() + TIMEOUT;
        while self.done.get().unwrap() != self.seq {
            assert!(
                Instant::now() < deadline,
                "launch {} did not complete",
                self.seq
            );
            std::hint::spin_loop();
        }
    }
}

fn timed(iters: u64, mut one: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        one();
    }
    start.elapsed()
}

fn figure(c: &mut Criterion, threads: u32) {
    let mut g: Group<'_> = c.benchmark_group(format!("launch/{threads}"));
    g.bench_function("kernel_launch", |b| {
        let mut l = Launcher::start();
        for _ in 0..100 {
            l.launch(threads);
        }
        b.iter_custom(|iters| timed(iters, || l.launch(threads)));
        black_box(l.marks.get().unwrap());
    });
    if threads == 1 {
        g.bench_function("rpc", |b| {
            let l = Launcher::start();
            let handle = l.marks_handle;
            let mut v = 0u64;
            b.iter_custom(|iters| {
                timed(iters, || {
                    v += 1;
                    black_box(
                        l.dpa
                            .rpc(&kernels::SYNC_SET, (SyncEventHandle(handle), v))
                            .unwrap(),
                    );
                })
            });
        });
    }
    g.bench_function("thread_spawn_join", |b| {
        b.iter_custom(|iters| {
            timed(iters, || {
                let handles: Vec<_> = (0..threads)
                    .map(|_| std::thread::spawn(|| black_box(0u64)))
                    .collect();
                for h in handles {
                    h.join().unwrap();
                }
            })
        });
    });
    g.finish();
}

fn one_thread(c: &mut Criterion) {
    figure(c, 1);
}

fn eight_threads(c: &mut Criterion) {
    figure(c, 8);
}

criterion_group! {
    name = launch;
    config = support::config();
    targets = one_thread, eight_threads
}
criterion_main!(launch);
