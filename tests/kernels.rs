//! The kit's kernels end to end on the soft device. The kernels written both in Rust and in C
//! (echo, DMA offload) go through the same checks in each language, and every check runs in
//! both execution modes: the kernels compiled for the host (`native`), and the DPA image
//! `cargo xtask build-dpa` links run by the soft device's interpreter (`isa`).

use dpakit::abi::args::{DmaOffloadArgs, MsgqPathArgs};
use dpakit::abi::{
    DmaOffloadDesc, Echo, ErrorCode, ImmMessage, OffloadResult, PingPong, SubmitFlags, checksum64,
};
use dpakit::dpa::{Dpa, DpaBuilder};
use dpakit::mmap::{AccessFlags, Mmap};
use dpakit::pe::Pe;
use dpakit::soft::SoftSettings;
use dpakit::soft::{ExecMode, SchedMode};
use dpakit::sync_event::SyncEvent;
use dpakit::{MsgqPath, ThreadKernel, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

#[path = "support/one_message.rs"]
mod one_message;

const T: Duration = Duration::from_secs(5);

/// The echo kernel in each language.
const ECHOES: [&ThreadKernel<MsgqPathArgs>; 2] = [&kernels::ECHO, &kernels::ECHO_C];

/// The DMA-offload kernel in each language.
const OFFLOADS: [&ThreadKernel<DmaOffloadArgs>; 2] =
    [&kernels::DMA_OFFLOAD, &kernels::DMA_OFFLOAD_C];

fn dpa(mode: ExecMode) -> Dpa {
    builder(mode).workers(1).start().unwrap()
}

/// A busy-polling DPA running the kit's kernels in `mode`: natively, or from the kit's DPA image
/// in the soft device's interpreter (the image the kit's app embeds).
fn builder(mode: ExecMode) -> DpaBuilder {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .exec_mode(mode)
}

fn ping_pong_counts_each_leg(mode: ExecMode) {
    let dpa = dpa(mode);
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, &kernels::PING_PONG)
        .start()
        .unwrap();
    let mut ball = PingPong {
        count: 0,
        started_ns: 7,
        tag: 9,
    };
    for leg in 0..1000u64 {
        let reply = path
            .round_trip(&ImmMessage::new(leg as u32, &ball), T)
            .unwrap();
        assert_eq!(reply.msg.header.seq, leg as u32);
        let back: PingPong = reply.msg.view().unwrap();
        assert_eq!(
            back,
            PingPong {
                count: ball.count + 1,
                ..ball
            }
        );
        ball = PingPong {
            count: back.count + 1,
            ..back
        };
    }
    assert_eq!(ball.count, 2000);
    // Not a ping: refused with a status, not dropped.
    let reply = path
        .round_trip(&ImmMessage::new(5, &DmaOffloadDesc::default()), T)
        .unwrap();
    let status: OffloadResult = reply.msg.view().unwrap();
    assert_eq!(status.status, ErrorCode::InvalidValue.raw() as u32);
}

struct Offload {
    path: MsgqPath,
    src: Mmap,
    dst: Mmap,
}

/// The source's byte at `i`.
fn pattern(i: usize) -> u8 {
    (i * 7 + i / 251) as u8
}

/// An offload path between a source filled with [`pattern`] and a zeroed destination.
fn offload(dpa: &Dpa, pe: &Pe, kernel: &ThreadKernel<DmaOffloadArgs>, len: usize) -> Offload {
    let mut src = Mmap::alloc(len).unwrap();
    src.set_permissions(AccessFlags::LOCAL_READ_ONLY).unwrap();
    src.add_dev(dpa.dev()).unwrap();
    for (i, b) in src.as_mut_slice().unwrap().iter_mut().enumerate() {
        *b = pattern(i);
    }
    src.start().unwrap();
    let mut dst = Mmap::alloc(len).unwrap();
    dst.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    dst.add_dev(dpa.dev()).unwrap();
    dst.start().unwrap();
    let (src_h, dst_h) = (
        dpa.mmap_handle(&src).unwrap(),
        dpa.mmap_handle(&dst).unwrap(),
    );
    let (src_base, dst_base) = (src.range().0 as u64, dst.range().0 as u64);
    let path = MsgqPath::builder(dpa, pe, kernel)
        .args(move |path| DmaOffloadArgs {
            path,
            src_mmap: src_h,
            dst_mmap: dst_h,
            src_base,
            src_len: len as u64,
            dst_base,
            dst_len: len as u64,
        })
        .start()
        .unwrap();
    Offload { path, src, dst }
}

fn dma_offload_copies_and_checksums(mode: ExecMode) {
    for kernel in OFFLOADS {
        dma_offload_checks(mode, kernel);
    }
}

fn dma_offload_checks(mode: ExecMode, kernel: &ThreadKernel<DmaOffloadArgs>) {
    let name = kernel.name();
    let dpa = dpa(mode);
    let pe = Pe::new().unwrap();
    let len = 1 << 16;
    let o = offload(&dpa, &pe, kernel, len);
    // A DMA source: devices only read it, so it may be viewed while started.
    let src = o.src.as_slice().unwrap();
    // The destination is written by the DPA: copied out after each reply.
    let dst = || {
        let mut bytes = vec![0; len];
        o.dst.read_at(0, &mut bytes).unwrap();
        bytes
    };
    for (seq, (src_off, dst_off, n)) in [
        (0u64, 0u64, 4096u64),
        (100, 8192, 3000),
        (60_000, 1, 5536),
        (7, 7, 0),
        (3, 20_000, 13),
    ]
    .into_iter()
    .enumerate()
    {
        let desc = DmaOffloadDesc {
            src_offset: src_off,
            dst_offset: dst_off,
            length: n,
        };
        let reply = o
            .path
            .round_trip(&ImmMessage::new(seq as u32, &desc), T)
            .unwrap();
        assert_eq!(reply.msg.header.seq, seq as u32, "{name}");
        assert_eq!(reply.len, 32, "{name}");
        let result: OffloadResult = reply.msg.view().unwrap();
        let expected = &src[src_off as usize..(src_off + n) as usize];
        assert_eq!(result.status, 0, "{name}");
        assert_eq!(result.length, n, "{name}");
        assert_eq!(result.checksum, checksum64(expected), "{name}");
        // The copy finished before its immediate arrived.
        assert_eq!(
            &dst()[dst_off as usize..(dst_off + n) as usize],
            expected,
            "{name}"
        );
    }
    // Copy only: the checksum is skipped and reported as 0.
    let desc = DmaOffloadDesc {
        src_offset: 512,
        dst_offset: 30_000,
        length: 1000,
    };
    let msg = ImmMessage::new(8, &desc).with_flags(DmaOffloadDesc::FLAG_NO_CHECKSUM);
    let result: OffloadResult = o.path.round_trip(&msg, T).unwrap().msg.view().unwrap();
    assert_eq!(
        (result.status, result.length, result.checksum),
        (0, 1000, 0),
        "{name}"
    );
    assert_eq!(&dst()[30_000..31_000], &src[512..1512], "{name}");

    // Out of range (source, destination, overflowing) or not a descriptor: answered with
    // INVALID_VALUE, nothing copied, the DPA stays healthy.
    let before = dst();
    let refused = [
        ImmMessage::new(
            9,
            &DmaOffloadDesc {
                src_offset: len as u64 - 10,
                dst_offset: 0,
                length: 11,
            },
        ),
        ImmMessage::new(
            10,
            &DmaOffloadDesc {
                src_offset: 0,
                dst_offset: len as u64,
                length: 1,
            },
        ),
        ImmMessage::new(
            11,
            &DmaOffloadDesc {
                src_offset: u64::MAX - 4,
                dst_offset: 0,
                length: 8,
            },
        ),
        ImmMessage::new(12, &Echo::default()),
    ];
    for msg in refused {
        let reply = o.path.round_trip(&msg, T).unwrap();
        assert_eq!(reply.msg.header.seq, msg.header.seq, "{name}");
        let result: OffloadResult = reply.msg.view().unwrap();
        assert_eq!(
            result,
            OffloadResult {
                status: ErrorCode::InvalidValue.raw() as u32,
                ..OffloadResult::default()
            },
            "{name}"
        );
    }
    assert_eq!(dst(), before, "{name}: a refused request copied nothing");
    assert_eq!(dpa.check(), Ok(()), "{name}");
}

fn the_sink_consumes_every_message_one_way(mode: ExecMode) {
    let dpa = dpa(mode);
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, &kernels::SINK)
        .depth(16)
        .start()
        .unwrap();
    let total = 10_000u32;
    for i in 0..total {
        path.send_msg(&ImmMessage::new(i, &PingPong::default()))
            .unwrap();
    }
    let deadline = std::time::Instant::now() + T;
    while path.kernel_state().unwrap().sends < total {
        path.pe().progress();
        assert!(std::time::Instant::now() < deadline, "the sink stalled");
    }
    assert_eq!(
        path.kernel_state().unwrap().sends,
        total,
        "nothing extra, nothing lost"
    );
    assert_eq!(path.try_recv().unwrap(), None, "the sink never answers");
}

/// Any mix of sends and receives that keeps at most `depth` messages unanswered works: the
/// path re-posts the receives of replies it handed out before a reply could need them. Every
/// reply comes back once, in order. (100,000 replies per kernel and mode natively, 20,000 in
/// ISA mode: the host side under test is the same, the interpreter only slower.)
fn any_window_of_sends_and_receives_up_to_the_depth(exec: ExecMode) {
    let replies = match exec {
        ExecMode::Native => 100_000,
        ExecMode::Isa => 20_000,
    };
    for (kernel, mode) in ECHOES
        .into_iter()
        .flat_map(|k| [SchedMode::BusyPoll, SchedMode::Deterministic { seed: 3 }].map(|m| (k, m)))
    {
        let name = kernel.name();
        let dpa = builder(exec).sched_mode(mode).workers(1).start().unwrap();
        let pe = Pe::new().unwrap();
        let depth = 4u32;
        let path = MsgqPath::builder(&dpa, &pe, kernel)
            .depth(depth)
            .start()
            .unwrap();
        let (mut sent, mut received) = (0u32, 0u32);
        let mut lcg = 0x2545_f491_u32;
        while received < replies {
            lcg = lcg.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let unanswered = sent - received;
            // Half the time fill the window completely, else a random number of sends.
            let room = depth - unanswered;
            let sends = if lcg & 1 == 0 {
                room
            } else {
                (lcg >> 8) % (room + 1)
            };
            for _ in 0..sends {
                path.send_msg(&ImmMessage::new(sent, &dpakit::abi::Echo::default()))
                    .unwrap();
                sent += 1;
            }
            // Half the time take every reply, which leaves all their receives owed.
            let receives = match sent - received {
                0 => 0,
                n if lcg & 2 == 0 => n,
                n => 1 + (lcg >> 16) % n,
            };
            for _ in 0..receives {
                let reply = path.recv(T).unwrap();
                assert_eq!(reply.msg.header.seq, received, "{name} {mode:?}");
                received += 1;
            }
        }
        dpa.check().unwrap();
    }
}

/// Every immediate comes back byte for byte and at its length, with every reporting setting
/// the kernel handles (one report per reply, or one in `report_every` with OPTIMIZE_REPORTS on
/// the others, whatever the path asked for).
fn echo_returns_every_immediate_byte_for_byte(mode: ExecMode) {
    for kernel in ECHOES {
        for flags in [
            SubmitFlags::FLUSH,
            SubmitFlags::FLUSH | SubmitFlags::OPTIMIZE_REPORTS,
            SubmitFlags::NONE,
        ] {
            let name = kernel.name();
            let dpa = dpa(mode);
            let pe = Pe::new().unwrap();
            let path = MsgqPath::builder(&dpa, &pe, kernel)
                .depth(8)
                .submit_flags(flags)
                .start()
                .unwrap();
            for i in 0..2000u64 {
                let echo = Echo {
                    token: i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    timestamp_ns: !i,
                    tag: i << 7,
                };
                let msg = ImmMessage::new(i as u32, &echo).with_flags(i as u16);
                let reply = path.round_trip(&msg, T).unwrap();
                assert_eq!(reply.len, 32, "{name} {flags:?}");
                assert_eq!(reply.msg, msg, "{name} {flags:?}");
            }
            // Shorter immediates come back at their own length (none at all, too).
            for len in [0usize, 1, 5, 31] {
                let bytes: Vec<u8> = (0..len as u8).map(|b| b ^ 0xa5).collect();
                path.send(&bytes).unwrap();
                let reply = path.recv(T).unwrap();
                assert_eq!(reply.len as usize, len, "{name} {flags:?}");
                assert_eq!(&reply.msg.as_bytes()[..len], &bytes[..], "{name}");
            }
            assert_eq!(path.kernel_state().unwrap().sends, 2004, "{name} {flags:?}");
            dpa.check().unwrap();
        }
    }
}

/// Several echo threads on one DPA, in both languages at once, each answering its own path: no
/// reply crosses to another path, none is lost or repeated, whatever runs where.
fn echo_threads_of_both_languages_share_a_dpa(mode: ExecMode) {
    let dpa = builder(mode).workers(2).start().unwrap();
    let pe = Pe::new().unwrap();
    let paths: Vec<MsgqPath> = (0..6)
        .map(|i| {
            MsgqPath::builder(&dpa, &pe, ECHOES[i % 2])
                .depth(16)
                .start()
                .unwrap()
        })
        .collect();
    let rounds = 3000u32;
    for round in 0..rounds {
        // A window of messages on every path before any reply is read.
        for (p, path) in paths.iter().enumerate() {
            let echo = Echo {
                token: p as u64,
                timestamp_ns: u64::from(round),
                tag: 0,
            };
            path.send_msg(&ImmMessage::new(round, &echo)).unwrap();
        }
        if round % 8 == 7 {
            for (p, path) in paths.iter().enumerate() {
                for seq in round - 7..=round {
                    let reply = path.recv(T).unwrap();
                    assert_eq!(reply.msg.header.seq, seq, "path {p}");
                    let echo: Echo = reply.msg.view().unwrap();
                    assert_eq!((echo.token, echo.timestamp_ns), (p as u64, u64::from(seq)));
                }
            }
        }
    }
    for path in &paths {
        assert_eq!(path.try_recv().unwrap(), None, "nothing extra");
        assert_eq!(path.kernel_state().unwrap().sends, rounds);
    }
    dpa.check().unwrap();
}

/// Kernels that wait on a host sync event and advance it (the bound already met, then a bound the
/// host meets while the kernel waits), and set it.
fn a_kernel_waits_on_and_advances_a_sync_event(mode: ExecMode) {
    let dpa = dpa(mode);
    let event = SyncEvent::builder()
        .publisher_dpa(&dpa)
        .subscriber_cpu(dpa.dev())
        .start()
        .unwrap();
    let handle = event.dpa_handle(&dpa).unwrap();
    event.set(5).unwrap();
    assert_eq!(dpa.rpc(&kernels::SYNC_STEP, (handle, 4, 10)).unwrap(), 15);
    assert_eq!(event.get().unwrap(), 15);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(event.get().unwrap(), 15, "the kernel waits for the bound");
            event.set(101).unwrap();
        });
        assert_eq!(dpa.rpc(&kernels::SYNC_STEP, (handle, 100, 1)).unwrap(), 102);
    });
    assert_eq!(dpa.rpc(&kernels::SYNC_SET, (handle, 7)).unwrap(), 7);
    assert_eq!(event.get().unwrap(), 7);
    dpa.check().unwrap();
}

/// Each check as a test per execution mode: `native::NAME` and `isa::NAME`.
macro_rules! in_both_modes {
    ($($name:ident),* $(,)?) => {
        mod native {
            $(#[test]
            fn $name() {
                super::$name(super::ExecMode::Native)
            })*
        }
        mod isa {
            $(#[test]
            fn $name() {
                super::$name(super::ExecMode::Isa)
            })*
        }
    };
}

in_both_modes!(
    ping_pong_counts_each_leg,
    dma_offload_copies_and_checksums,
    the_sink_consumes_every_message_one_way,
    any_window_of_sends_and_receives_up_to_the_depth,
    echo_returns_every_immediate_byte_for_byte,
    echo_threads_of_both_languages_share_a_dpa,
    a_kernel_waits_on_and_advances_a_sync_event
);

/// Where a Rust kernel panics (a thread argument or local storage that is null or misaligned),
/// which fails the DPA context, a C kernel logs and finishes its thread: the activation ends
/// with `thread_finish` and the DPA stays healthy.
#[test]
fn a_c_kernel_finishes_its_thread_on_a_bad_argument_or_local_storage() {
    use dpakit::dpa::{DevPtr, DpaThread};
    use dpakit::soft::Ending;
    // Raw: the point is a block that is not a live argument of the kernel's type.
    for kernel in [kernels::ECHO_C.untyped(), kernels::DMA_OFFLOAD_C.untyped()] {
        for case in [
            "null argument",
            "misaligned argument",
            "misaligned local storage",
        ] {
            let dpa = Dpa::builder(&open_dpa_dev().unwrap())
                .app(kit_app())
                .sched_mode(SchedMode::Deterministic { seed: 1 })
                .start()
                .unwrap();
            let pe = Pe::new().unwrap();
            // Aligned and large enough for either kernel's block; never read in these cases.
            let block = dpa.mem_alloc(256).unwrap();
            let mut builder = match case {
                "null argument" => DpaThread::builder(&dpa, &kernel).arg(0),
                "misaligned argument" => DpaThread::builder(&dpa, &kernel).arg(block.raw() + 4),
                _ => DpaThread::builder(&dpa, &kernel).arg(block.raw()),
            };
            if case == "misaligned local storage" {
                builder = builder.local_storage(DevPtr(block.raw() + 2));
            }
            let thread = builder.start().unwrap();
            let _sent = one_message::send_one_message(&dpa, &pe, &thread);
            // Deterministic mode runs ready activations inside progress.
            for _ in 0..100 {
                if !dpa.trace().unwrap().is_empty() {
                    break;
                }
                pe.progress();
            }
            let endings: Vec<Ending> = dpa.trace().unwrap().iter().map(|e| e.ending).collect();
            assert_eq!(endings, [Ending::Finish], "{} {case}", kernel.name());
            assert_eq!(dpa.error(), None, "{} {case}", kernel.name());
        }
    }
}

/// The kit's app carries the DPA image its build script built from the same sources (with
/// feature doca, the app library names its own): ISA mode runs it with no path named, the file
/// stays for tools, and a file named explicitly wins (a missing one is NOT_FOUND naming it).
#[test]
fn the_kit_app_embeds_its_dpa_image() {
    if cfg!(feature = "doca") {
        // DOCA's app library (here the soft one build-dpa makes) holds the kernels and names
        // its image; the Rust build embeds none.
        assert_eq!(dpakit::kit_image(), None);
    } else {
        let file = dpakit::kit_image().expect("the kernels' build script built the image");
        assert!(file.is_file(), "{}", file.display());
        assert_eq!(file.file_name().unwrap(), "dpakit_kernels.elf");
    }
    let dpa = builder(ExecMode::Isa).start().unwrap();
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
        .start()
        .unwrap();
    let echo = Echo {
        token: 7,
        timestamp_ns: 0,
        tag: 42,
    };
    let reply = path.round_trip(&ImmMessage::new(1, &echo), T).unwrap();
    let back: Echo = reply.msg.view().unwrap();
    assert_eq!((back.token, back.tag), (7, 42));
    drop(path);
    let missing = "/nonexistent/dpakit_kernels.elf";
    let e = builder(ExecMode::Isa)
        .isa_image(missing)
        .start()
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotFound, "{e}");
    assert!(e.to_string().contains(missing), "{e}");
}
