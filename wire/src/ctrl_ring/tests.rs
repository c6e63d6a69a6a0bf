use super::*;
#[cfg(not(loom))]
use dpakit_abi::ErrorCode;

#[cfg(not(loom))]
mod unit {
    use super::*;

    use std::mem::ManuallyDrop;

    const MAX: usize = 100;

    /// A receiver and a sender over the same memory, as two processes have them: heap memory,
    /// so miri runs these tests too (the sender's view is never dropped: the receiver owns it).
    fn pair(depth: u64) -> (CtrlReceiver, ManuallyDrop<CtrlSender>) {
        let len = Ring::bytes(depth, MAX).unwrap();
        let rx = CtrlReceiver::lay_out(Mapping::heap(len), depth, MAX);
        let view = rx.ring.mem.alias();
        (rx, ManuallyDrop::new(CtrlSender::over(view, depth, MAX)))
    }

    fn pop(rx: &mut CtrlReceiver) -> Option<Vec<u8>> {
        let mut buf = [0u8; MAX];
        rx.pop(&mut buf).unwrap().map(|n| buf[..n].to_vec())
    }

    #[test]
    fn messages_arrive_in_order_across_wraps() {
        let (mut rx, mut tx) = pair(4);
        for round in 0..10u8 {
            for k in 0..3u8 {
                let msg = vec![round * 3 + k; usize::from(k) * 40];
                assert_eq!(tx.push(&msg).unwrap(), Pushed::Sent { wake: false });
            }
            for k in 0..3u8 {
                assert_eq!(
                    pop(&mut rx).unwrap(),
                    vec![round * 3 + k; usize::from(k) * 40]
                );
            }
            assert_eq!(pop(&mut rx), None);
        }
    }

    #[test]
    fn a_full_ring_keeps_the_message_and_the_receiver_wakes_its_sender() {
        let (mut rx, mut tx) = pair(2);
        tx.push(b"a").unwrap();
        tx.push(b"b").unwrap();
        assert_eq!(tx.push(b"c").unwrap(), Pushed::Full);
        assert_eq!(pop(&mut rx).unwrap(), b"a");
        assert!(rx.sender_waiting(), "the sender asked to be woken");
        assert!(!rx.sender_waiting(), "one wake-up per wait");
        assert_eq!(tx.push(b"c").unwrap(), Pushed::Sent { wake: false });
        assert_eq!(pop(&mut rx).unwrap(), b"b");
        assert_eq!(pop(&mut rx).unwrap(), b"c");
    }

    #[test]
    fn a_sleeping_receiver_is_woken_once() {
        let (mut rx, mut tx) = pair(4);
        assert!(!rx.sleep(), "nothing there yet");
        assert_eq!(tx.push(b"x").unwrap(), Pushed::Sent { wake: true });
        assert_eq!(tx.push(b"y").unwrap(), Pushed::Sent { wake: false });
        rx.awake();
        assert_eq!(pop(&mut rx).unwrap(), b"x");
        assert!(rx.sleep(), "a message is waiting: do not sleep");
        rx.awake();
        assert_eq!(tx.push(b"z").unwrap(), Pushed::Sent { wake: false });
    }

    /// The peer's side of a ring, written as a hostile peer would.
    fn header(tx: &CtrlSender) -> &Header {
        tx.ring.header()
    }

    #[test]
    fn a_published_count_past_one_ring_drops_the_peer() {
        let (mut rx, tx) = pair(4);
        header(&tx).tail.0.store(5, Ordering::Release);
        let err = rx.pop(&mut [0u8; MAX]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidValue);
        assert!(err.message().contains("5 control messages"), "{err}");
        // Counting backwards is the same violation.
        header(&tx).tail.0.store(u64::MAX, Ordering::Release);
        assert!(rx.pop(&mut [0u8; MAX]).is_err());
    }

    #[test]
    fn a_length_past_the_agreed_maximum_drops_the_peer() {
        let (mut rx, mut tx) = pair(4);
        tx.push(b"ok").unwrap();
        tx.ring
            .slot_head(0)
            .len
            .store(MAX as u32 + 1, Ordering::Relaxed);
        let err = rx.pop(&mut [0u8; MAX]).unwrap_err();
        assert!(err.message().contains("more than the 100 bytes"), "{err}");
    }

    #[test]
    fn a_read_position_ahead_of_the_sender_drops_the_peer() {
        let (rx, mut tx) = pair(4);
        rx.ring.header().head.0.store(3, Ordering::Release);
        assert_eq!(tx.push(b"x").unwrap_err().code(), ErrorCode::InvalidValue);
    }

    #[test]
    #[cfg_attr(miri, ignore = "memfd and mmap are system calls miri does not run")]
    fn only_a_sealed_memfd_of_the_ring_size_is_mapped() {
        let (mut rx, fd, len) = CtrlReceiver::create(8, MAX).unwrap();
        // The right announcement maps the receiver's own memory.
        let mut tx = CtrlSender::attach(&fd, 8, len, MAX).unwrap();
        tx.push(b"shared").unwrap();
        assert_eq!(pop(&mut rx).unwrap(), b"shared");
        for (depth, ring_len) in [(8, len + 64), (8, len - 64), (6, len), (512, len), (0, len)] {
            let err = CtrlSender::attach(&fd, depth, ring_len, MAX).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidValue, "{depth} {ring_len}");
        }
        // Depth and length agree, but the file is smaller than announced.
        let small = memfd(c"small", 64).unwrap();
        assert!(CtrlSender::attach(&small, 8, len, MAX).is_err());
        // A file that could shrink under the mapping.
        // SAFETY: no pointers.
        let raw = unsafe { libc::memfd_create(c"unsealed".as_ptr(), 0) };
        assert!(raw >= 0);
        // SAFETY: a fresh descriptor nothing else owns.
        let unsealed = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        // SAFETY: no pointers.
        assert_eq!(unsafe { libc::ftruncate(raw, len as libc::off_t) }, 0);
        assert!(CtrlSender::attach(&unsealed, 8, len, MAX).is_err());
    }

    #[test]
    fn depth_follows_the_receive_queue() {
        assert_eq!(depth_for(0), 1);
        assert_eq!(depth_for(1), 1);
        assert_eq!(depth_for(100), 128);
        assert_eq!(depth_for(128), 128);
        assert_eq!(depth_for(8192), COMCH_CTRL_RING_MAX_DEPTH as u64);
    }
}

#[cfg(loom)]
mod loom {
    use super::*;

    const MAX: usize = 8;

    fn pair(depth: u64) -> (CtrlReceiver, CtrlSender) {
        let len = Ring::bytes(depth, MAX).unwrap();
        let rx = CtrlReceiver::lay_out(Mapping::heap(len), depth, MAX);
        // The sender's view of the same memory, forgotten by each model (the receiver's ring
        // owns the loom objects).
        let view = rx.ring.mem.alias();
        (rx, CtrlSender::over(view, depth, MAX))
    }

    /// A receiver going to sleep while its sender publishes: either its last look finds the
    /// message, or the sender sees it asleep and wakes it.
    #[test]
    fn a_sleeping_receiver_is_never_missed() {
        ::loom::model(|| {
            let (mut rx, mut tx) = pair(2);
            let sender = ::loom::thread::spawn(move || {
                let Pushed::Sent { wake } = tx.push(b"m").unwrap() else {
                    panic!("an empty ring has room");
                };
                std::mem::forget(tx);
                wake
            });
            let saw_it = rx.sleep();
            let woke = sender.join().unwrap();
            assert!(saw_it || woke, "published unseen and unsignalled");
        });
    }

    /// A sender finding the ring full while its receiver takes a message: either the sender's
    /// second look finds the room, or the receiver sees the wait and wakes it.
    #[test]
    fn a_waiting_sender_is_never_missed() {
        ::loom::model(|| {
            let (mut rx, mut tx) = pair(1);
            tx.push(b"a").unwrap();
            let receiver = ::loom::thread::spawn(move || {
                let mut buf = [0u8; MAX];
                assert_eq!(rx.pop(&mut buf).unwrap(), Some(1));
                let woken = rx.sender_waiting();
                // Handed back: the memory must outlive the sender's last access.
                (rx, woken)
            });
            let pushed = tx.push(b"b").unwrap();
            std::mem::forget(tx);
            let (_rx, woken) = receiver.join().unwrap();
            assert!(
                pushed != Pushed::Full || woken,
                "the slot was freed unseen and unsignalled"
            );
        });
    }

    /// Three messages through a ring of two: slots wrap, order and contents hold.
    #[test]
    fn messages_wrap_in_order() {
        ::loom::model(|| {
            let (mut rx, mut tx) = pair(2);
            let sender = ::loom::thread::spawn(move || {
                for n in 0..3u8 {
                    while tx.push(&[n; 3]).unwrap() == Pushed::Full {
                        ::loom::thread::yield_now();
                    }
                }
                std::mem::forget(tx);
            });
            let mut got = Vec::new();
            let mut buf = [0u8; MAX];
            while got.len() < 3 {
                match rx.pop(&mut buf).unwrap() {
                    Some(n) => got.push(buf[..n].to_vec()),
                    None => ::loom::thread::yield_now(),
                }
            }
            sender.join().unwrap();
            assert_eq!(got, [[0u8; 3], [1; 3], [2; 3]]);
        });
    }
}
