//! The kit's kernels end to end on the soft device.

use dpakit::abi::args::DmaOffloadArgs;
use dpakit::abi::{DmaOffloadDesc, ErrorCode, ImmMessage, OffloadResult, PingPong, checksum64};
use dpakit::dpa::Dpa;
use dpakit::mmap::{AccessFlags, Mmap};
use dpakit::pe::Pe;
use dpakit::soft::SchedMode;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::time::Duration;

const T: Duration = Duration::from_secs(5);

fn dpa() -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .start()
        .unwrap()
}

#[test]
fn ping_pong_counts_each_leg() {
    let dpa = dpa();
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

fn offload(dpa: &Dpa, pe: &Pe, len: usize) -> Offload {
    let src = Mmap::alloc(len).unwrap();
    src.set_permissions(AccessFlags::LOCAL_READ_ONLY).unwrap();
    src.add_dev(dpa.dev()).unwrap();
    src.start().unwrap();
    let dst = Mmap::alloc(len).unwrap();
    dst.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    dst.add_dev(dpa.dev()).unwrap();
    dst.start().unwrap();
    let (src_h, dst_h) = (
        dpa.mmap_handle(&src).unwrap(),
        dpa.mmap_handle(&dst).unwrap(),
    );
    let (src_base, dst_base) = (src.range().0 as u64, dst.range().0 as u64);
    let path = MsgqPath::builder(dpa, pe, &kernels::DMA_OFFLOAD)
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

#[test]
fn dma_offload_copies_and_checksums() {
    let dpa = dpa();
    let pe = Pe::new().unwrap();
    let len = 1 << 16;
    let o = offload(&dpa, &pe, len);
    // SAFETY: the mmap owns `len` bytes and no DMA is in flight.
    let src = unsafe { std::slice::from_raw_parts_mut(o.src.range().0, len) };
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i * 7 + i / 251) as u8;
    }
    for (seq, (src_off, dst_off, n)) in [
        (0u64, 0u64, 4096u64),
        (100, 8192, 3000),
        (60_000, 1, 5536),
        (7, 7, 0),
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
        let result: OffloadResult = reply.msg.view().unwrap();
        let expected = &src[src_off as usize..(src_off + n) as usize];
        assert_eq!(result.status, 0);
        assert_eq!(result.length, n);
        assert_eq!(result.checksum, checksum64(expected));
        // SAFETY: the copy finished before its immediate arrived.
        let dst = unsafe { std::slice::from_raw_parts(o.dst.range().0, len) };
        assert_eq!(&dst[dst_off as usize..(dst_off + n) as usize], expected);
    }
    // Out of range: answered with INVALID_VALUE, nothing copied, the DPA stays healthy.
    let bad = DmaOffloadDesc {
        src_offset: len as u64 - 10,
        dst_offset: 0,
        length: 11,
    };
    let result: OffloadResult = o
        .path
        .round_trip(&ImmMessage::new(9, &bad), T)
        .unwrap()
        .msg
        .view()
        .unwrap();
    assert_eq!(result.status, ErrorCode::InvalidValue.raw() as u32);
    assert_eq!(dpa.check(), Ok(()));
}

#[test]
fn the_sink_consumes_every_message_one_way() {
    let dpa = dpa();
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
/// reply comes back once, in order.
#[test]
fn any_window_of_sends_and_receives_up_to_the_depth() {
    for mode in [SchedMode::BusyPoll, SchedMode::Deterministic { seed: 3 }] {
        let dpa = Dpa::builder(&open_dpa_dev().unwrap())
            .app(kit_app())
            .sched_mode(mode)
            .workers(1)
            .start()
            .unwrap();
        let pe = Pe::new().unwrap();
        let depth = 4u32;
        let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO)
            .depth(depth)
            .start()
            .unwrap();
        let (mut sent, mut received) = (0u32, 0u32);
        let mut lcg = 0x2545_f491_u32;
        while received < 200_000 {
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
                assert_eq!(reply.msg.header.seq, received, "{mode:?}");
                received += 1;
            }
        }
        dpa.check().unwrap();
    }
}
