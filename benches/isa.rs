//! The interpreter on memory-heavy code: guest instructions per second of the kit's DMA-offload
//! kernels run from the DPA image (ISA mode), checksumming 64 KiB of host memory per message
//! through an mmap's external pointer, every load checked by the soft device's bus.
//!
//! Figure `isa/checksum_64KiB/<kernel>`, throughput in guest instructions: `dma_offload` (Rust)
//! and `dma_offload_c` (C). One iteration is one descriptor's round trip in deterministic mode
//! (the activation runs on this thread, inside the PE's progress): the checksum (about 98 % of
//! the guest instructions), the DMA copy of the same 64 KiB, the reply. The guest instructions
//! per message are counted by the interpreter before the measurement (they are the same for
//! every message). The interpreter's own loop bench is `cargo bench -p dpakit-rv`.
//!
//! `cargo bench --bench isa` (the image: `cargo xtask build-dpa --release`)

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dpakit::abi::args::DmaOffloadArgs;
use dpakit::abi::{DmaOffloadDesc, ImmMessage, OffloadResult, checksum64};
use dpakit::dpa::Dpa;
use dpakit::mmap::{AccessFlags, Mmap};
use dpakit::pe::Pe;
use dpakit::soft::SoftSettings;
use dpakit::soft::{ExecMode, SchedMode};
use dpakit::{MsgqPath, ThreadKernel, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

const LEN: usize = 64 << 10;
const TIMEOUT: Duration = Duration::from_secs(10);

/// A DMA-offload kernel in ISA mode between two 64 KiB mmaps.
struct Offload {
    // Dropped first: the path (and its DPA thread) before the mmaps it reads.
    path: MsgqPath,
    _mmaps: (Mmap, Mmap),
    expected: u64,
    seq: u32,
}

impl Offload {
    fn new(kernel: &'static ThreadKernel<DmaOffloadArgs>) -> Self {
        let dpa = Dpa::builder(&open_dpa_dev().unwrap())
            .app(kit_app())
            .sched_mode(SchedMode::Deterministic { seed: 1 })
            .exec_mode(ExecMode::Isa)
            .start()
            .expect("ISA mode: the DPA image the kit's app embeds");
        let mmap = |flags| {
            let mut m = Mmap::alloc(LEN).unwrap();
            m.set_permissions(flags).unwrap();
            m.add_dev(dpa.dev()).unwrap();
            m.start().unwrap();
            m
        };
        let (src, dst) = (
            mmap(AccessFlags::LOCAL_READ_ONLY),
            mmap(AccessFlags::LOCAL_READ_WRITE),
        );
        // SAFETY: the source mmap owns LEN bytes, used by nothing else yet.
        let bytes = unsafe { std::slice::from_raw_parts_mut(src.range().0, LEN) };
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 7 + i / 251) as u8;
        }
        let expected = checksum64(bytes);
        let (src_mmap, dst_mmap) = (
            dpa.mmap_handle(&src).unwrap(),
            dpa.mmap_handle(&dst).unwrap(),
        );
        let (src_base, dst_base) = (src.range().0 as u64, dst.range().0 as u64);
        let pe = Pe::new().unwrap();
        let path = MsgqPath::builder(&dpa, &pe, kernel)
            .args(move |path| DmaOffloadArgs {
                path,
                src_mmap,
                dst_mmap,
                src_base,
                src_len: LEN as u64,
                dst_base,
                dst_len: LEN as u64,
            })
            .start()
            .unwrap();
        Self {
            path,
            _mmaps: (src, dst),
            expected,
            seq: 0,
        }
    }

    /// One descriptor: checksum and copy of the whole source, its reply checked.
    fn once(&mut self) {
        let desc = DmaOffloadDesc {
            src_offset: 0,
            dst_offset: 0,
            length: LEN as u64,
        };
        self.seq = self.seq.wrapping_add(1);
        let reply = self
            .path
            .round_trip(&ImmMessage::new(self.seq, &desc), TIMEOUT)
            .unwrap();
        let result: OffloadResult = reply.msg.view().unwrap();
        assert_eq!((result.status, result.checksum), (0, self.expected));
    }

    /// Guest instructions per message, counted by the interpreter over a few messages.
    fn instructions_per_message(&mut self) -> u64 {
        let count = |o: &Self| o.path.thread().isa_profile().unwrap().instructions;
        self.once();
        let before = count(self);
        for _ in 0..4 {
            self.once();
        }
        (count(self) - before) / 4
    }
}

fn isa(c: &mut Criterion) {
    let mut group = c.benchmark_group("isa/checksum_64KiB");
    for kernel in [&kernels::DMA_OFFLOAD, &kernels::DMA_OFFLOAD_C] {
        let mut offload = Offload::new(kernel);
        group.throughput(Throughput::Elements(offload.instructions_per_message()));
        group.bench_function(kernel.name(), |b| b.iter(|| offload.once()));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = isa
}
criterion_main!(benches);
