//! Copy bandwidth: the DPA's DMA copy, driven by a descriptor per copy through the DMA-offload
//! kernel, beside `memcpy` on the host.
//!
//! Figures `64B`, `4KiB`, `64KiB`, `1MiB`, `4MiB` (criterion ids `dma/<figure>/<subject>`),
//! subjects:
//! - `dpakit`: `MsgqPath` into the DMA-offload kernel (DPA worker busy-polling), mmaps of the
//!   copy's size on each side; one `DmaOffloadDesc` with `FLAG_NO_CHECKSUM` at a time, and its
//!   reply (the copy's completion immediate) waited for, so one iteration is a whole copy:
//!   descriptor there, copy, completion back;
//! - `doca_dma`: the soft device's DMA context (`dpakit::dma`, DOCA's `doca_dma`): one memcpy
//!   task per copy between buffers of two mmaps, submitted and progressed on this thread until
//!   its completion callback ran (a copy longer than the engine's 1 MiB per progress call takes
//!   several calls);
//! - `memcpy`: `copy_nonoverlapping` of the same size between two buffers on the host thread.
//!
//! Time per iteration is one copy; throughput is in bytes. `cargo bench --bench dma`

#[path = "support/mod.rs"]
mod support;

use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use dpakit::abi::args::DmaOffloadArgs;
use dpakit::abi::{DmaOffloadDesc, ImmMessage, OffloadResult};
use dpakit::buf::{Buf, BufInventory};
use dpakit::dma::Dma;
use dpakit::mmap::{AccessFlags, Mmap};
use dpakit::pe::Pe;
use dpakit::soft::{SchedMode, pin_current_thread};
use dpakit::{MsgqPath, kernels};
use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::{Duration, Instant};
use support::{TIMEOUT, cores};

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Copies each subject makes before Criterion's own warm-up (fewer for large ones).
fn warm_up_copies(size: usize) -> u64 {
    ((64 << 20) / size).clamp(16, 2_000) as u64
}

/// The source bytes: a pattern, so a wrong copy shows.
fn fill(bytes: &mut [u8]) {
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i * 7 + i / 251) as u8;
    }
}

/// dpakit's offloaded copy of `size` bytes, source and destination mmaps of that size.
struct DpakitDma {
    // Dropped first: the path (and its DPA thread) before the mmaps it copies between.
    path: MsgqPath,
    src: Mmap,
    dst: Mmap,
    size: usize,
    seq: u32,
}

impl DpakitDma {
    fn start(core: usize, size: usize) -> Self {
        let dpa = support::dpa(SchedMode::BusyPoll, core);
        let pe = Pe::new().expect("PE");
        let mut src = Mmap::alloc(size).expect("source mmap");
        src.set_permissions(AccessFlags::LOCAL_READ_ONLY)
            .expect("permissions");
        src.add_dev(dpa.dev()).expect("device");
        fill(src.as_mut_slice().expect("not started yet"));
        src.start().expect("start");
        let mut dst = Mmap::alloc(size).expect("destination mmap");
        dst.set_permissions(AccessFlags::LOCAL_READ_WRITE)
            .expect("permissions");
        dst.add_dev(dpa.dev()).expect("device");
        dst.start().expect("start");
        let (src_mmap, dst_mmap) = (
            dpa.mmap_handle(&src).expect("handle"),
            dpa.mmap_handle(&dst).expect("handle"),
        );
        let (src_base, dst_base) = (src.range().0 as u64, dst.range().0 as u64);
        let path = MsgqPath::builder(&dpa, &pe, &kernels::DMA_OFFLOAD)
            .args(move |path| DmaOffloadArgs {
                path,
                src_mmap,
                dst_mmap,
                src_base,
                src_len: size as u64,
                dst_base,
                dst_len: size as u64,
            })
            .start()
            .expect("DMA offload path");
        let mut this = Self {
            path,
            src,
            dst,
            size,
            seq: 0,
        };
        for _ in 0..warm_up_copies(size) {
            this.copy();
        }
        // SAFETY: both mmaps own `size` bytes; the last copy completed before its reply came.
        let (src, dst) = unsafe {
            (
                std::slice::from_raw_parts(this.src.range().0, size),
                std::slice::from_raw_parts(this.dst.range().0, size),
            )
        };
        assert!(src == dst, "the DMA copy differs from its source");
        this
    }

    /// One copy of the whole range, waited for.
    #[inline]
    fn copy(&mut self) {
        self.seq = self.seq.wrapping_add(1);
        let desc = DmaOffloadDesc {
            src_offset: 0,
            dst_offset: 0,
            length: self.size as u64,
        };
        let msg = ImmMessage::new(self.seq, &desc).with_flags(DmaOffloadDesc::FLAG_NO_CHECKSUM);
        self.path.send_msg(&msg).expect("send");
        let reply = self.path.recv(TIMEOUT).expect("copy completion");
        if cfg!(debug_assertions) {
            let result: OffloadResult = reply.msg.view().expect("an OffloadResult");
            assert_eq!((result.status, result.length), (0, self.size as u64));
        }
    }
}

impl Drop for DpakitDma {
    fn drop(&mut self) {
        self.path.dpa().check().expect("the DPA stayed healthy");
    }
}

/// The soft device's DMA context: one memcpy task per copy, completed through this thread's PE.
struct DocaDma {
    // Dropped first: the context (stopped and destroyed) before the buffers of its tasks.
    dma: Dma,
    pe: Pe,
    from: Buf<'static>,
    to: Buf<'static>,
    done: Rc<Cell<u64>>,
}

impl DocaDma {
    fn start(size: usize) -> Self {
        let dev = dpakit::dev::Dev::open_first(|d| d.dma_cap_task_memcpy_is_supported().is_ok())
            .expect("a device with DMA");
        let pe = Pe::new().expect("PE");
        // The buffers borrow their mmaps and inventory for the bench's life: leaked, once per
        // figure.
        let mmap = |f: &dyn Fn(&mut [u8])| -> &'static Mmap {
            let mut m = Mmap::alloc(size).expect("mmap");
            f(m.as_mut_slice().expect("not started yet"));
            m.add_dev(&dev).expect("device");
            m.start().expect("start");
            Box::leak(Box::new(m))
        };
        let (src, dst) = (mmap(&fill), mmap(&|_| {}));
        let inv: &'static BufInventory = Box::leak(Box::new(BufInventory::new(2).expect("inv")));
        let from = inv
            .buf_get_by_data(src, src.range().0, size)
            .expect("source");
        let to = inv
            .buf_get_by_addr(dst, dst.range().0, size)
            .expect("destination");
        let done = Rc::new(Cell::new(0));
        let d = done.clone();
        let dma = Dma::builder(&dev, &pe)
            .num_tasks(1)
            .on_complete(move |c| {
                debug_assert!(c.status == dpakit::ErrorCode::Success);
                d.set(d.get() + 1);
            })
            .start()
            .expect("DMA context");
        let mut this = Self {
            dma,
            pe,
            from,
            to,
            done,
        };
        for _ in 0..warm_up_copies(size) {
            this.copy();
        }
        let mut landed = vec![0; size];
        dst.read_at(0, &mut landed).expect("read");
        let mut expected = vec![0; size];
        fill(&mut expected);
        assert!(landed == expected, "the DMA copy differs from its source");
        this
    }

    /// One copy of the whole range, waited for.
    #[inline]
    fn copy(&mut self) {
        self.to.reset_data_len().expect("reset");
        let want = self.done.get() + 1;
        self.dma.memcpy(&self.from, &self.to, 0).expect("memcpy");
        while self.done.get() < want {
            self.pe.progress();
        }
    }
}

/// `memcpy` between two host buffers.
struct Memcpy {
    src: Vec<u8>,
    dst: Vec<u8>,
}

impl Memcpy {
    fn start(size: usize) -> Self {
        let mut src = vec![0u8; size];
        fill(&mut src);
        let mut this = Self {
            src,
            dst: vec![1u8; size],
        };
        for _ in 0..warm_up_copies(size) {
            this.copy();
        }
        assert!(this.src == this.dst);
        this
    }

    #[inline]
    fn copy(&mut self) {
        let (src, dst) = (
            black_box(self.src.as_ptr()),
            black_box(self.dst.as_mut_ptr()),
        );
        // SAFETY: two distinct allocations of `src.len()` bytes each.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, self.src.len()) };
        black_box(dst);
    }
}

fn timed(iters: u64, mut copy: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        copy();
    }
    start.elapsed()
}

fn figure(c: &mut Criterion, name: &str, size: usize) {
    let (host, responder) = cores();
    pin_current_thread(host).expect("pin to a core this machine has");
    let mut g: Group<'_> = c.benchmark_group(format!("dma/{name}"));
    g.throughput(Throughput::Bytes(size as u64));
    support::bench_subject(
        &mut g,
        "dpakit",
        || DpakitDma::start(responder, size),
        |s, iters| timed(iters, || s.copy()),
    );
    support::bench_subject(
        &mut g,
        "doca_dma",
        || DocaDma::start(size),
        |s, iters| timed(iters, || s.copy()),
    );
    support::bench_subject(
        &mut g,
        "memcpy",
        || Memcpy::start(size),
        |s, iters| timed(iters, || s.copy()),
    );
    g.finish();
}

fn dma(c: &mut Criterion) {
    for (name, size) in [
        ("64B", 64),
        ("4KiB", 4 << 10),
        ("64KiB", 64 << 10),
        ("1MiB", 1 << 20),
        ("4MiB", 4 << 20),
    ] {
        figure(c, name, size);
    }
}

criterion_group! {
    name = benches;
    config = support::config();
    targets = dma
}
criterion_main!(benches);
