use super::*;
use std::sync::Arc;

/// A message naming its producer and its place in that producer's stream.
fn message(producer_id: u32, seq: u32) -> [u8; 8] {
    let mut bytes = [0; 8];
    bytes[..4].copy_from_slice(&producer_id.to_le_bytes());
    bytes[4..].copy_from_slice(&seq.to_le_bytes());
    bytes
}

fn decode(imm: &[u8]) -> (u32, u32) {
    let producer_id = u32::from_le_bytes(imm[..4].try_into().unwrap());
    (
        producer_id,
        u32::from_le_bytes(imm[4..8].try_into().unwrap()),
    )
}

#[test]
fn capacity_rounds_up_to_a_power_of_two() {
    assert_eq!(CompletionRing::new(0).capacity(), 1);
    assert_eq!(CompletionRing::new(1).capacity(), 1);
    assert_eq!(CompletionRing::new(3).capacity(), 4);
    assert_eq!(CompletionRing::new(64).capacity(), 64);
}

#[test]
fn poll_hands_out_in_order_and_release_frees() {
    let ring = CompletionRing::new(4);
    for seq in 0..3 {
        ring.try_push(&message(7, seq), 7).unwrap();
    }
    assert_eq!(ring.len_hint(), 3);
    // SAFETY: this test is the only consumer.
    unsafe {
        let first = ring.poll().unwrap();
        let second = ring.poll().unwrap();
        assert_eq!((first.pos(), second.pos()), (0, 1));
        assert_eq!(decode(first.imm()), (7, 0));
        assert_eq!(decode(second.imm()), (7, 1));
        assert_eq!(ring.outstanding(), 2);
        // Still readable after later polls: nothing was freed.
        assert_eq!(decode(first.imm()), (7, 0));
        ring.release(2).unwrap();
        assert_eq!(ring.outstanding(), 0);
        assert_eq!(decode(ring.poll().unwrap().imm()), (7, 2));
        assert!(ring.poll().is_none());
        ring.release(1).unwrap();
    }
    assert_eq!(ring.len_hint(), 0);
}

#[test]
fn full_at_capacity_until_released() {
    let ring = CompletionRing::new(2);
    ring.try_push(b"a", 1).unwrap();
    ring.try_push(b"b", 1).unwrap();
    assert_eq!(ring.try_push(b"c", 1), Err(RingFull));
    // SAFETY: this test is the only consumer.
    unsafe {
        // Polling alone does not make room: the messages are still held.
        let a = ring.poll().unwrap();
        assert_eq!(a.imm(), b"a");
        assert_eq!(ring.try_push(b"c", 1), Err(RingFull));
        ring.release(1).unwrap();
        ring.try_push(b"c", 1).unwrap();
        assert_eq!(ring.try_push(b"d", 1), Err(RingFull));
        assert_eq!(ring.poll().unwrap().imm(), b"b");
        assert_eq!(ring.poll().unwrap().imm(), b"c");
        ring.release(2).unwrap();
    }
    ring.try_push(b"d", 1).unwrap();
}

#[test]
fn a_single_slot_ring_alternates() {
    let ring = CompletionRing::new(1);
    for round in 0..5u8 {
        ring.try_push(&[round], 0).unwrap();
        assert_eq!(ring.try_push(&[round], 0), Err(RingFull));
        // SAFETY: this test is the only consumer.
        unsafe {
            assert_eq!(ring.poll().unwrap().imm(), &[round]);
            assert!(ring.poll().is_none());
            assert_eq!(ring.try_push(&[round], 0), Err(RingFull));
            ring.release(1).unwrap();
        }
    }
}

#[test]
fn releasing_more_than_polled_is_an_error() {
    let ring = CompletionRing::new(4);
    ring.try_push(b"x", 0).unwrap();
    ring.try_push(b"y", 0).unwrap();
    // SAFETY: this test is the only consumer.
    unsafe {
        let err = ring.release(1).unwrap_err();
        assert_eq!(
            err,
            ReleaseError {
                requested: 1,
                outstanding: 0
            }
        );
        assert!(err.to_string().contains("only 0"));
        ring.poll().unwrap();
        assert_eq!(
            ring.release(2),
            Err(ReleaseError {
                requested: 2,
                outstanding: 1
            })
        );
        // The failed call freed nothing.
        assert_eq!(ring.outstanding(), 1);
        ring.release(0).unwrap();
        ring.release(1).unwrap();
        assert_eq!(ring.poll().unwrap().imm(), b"y");
    }
}

#[test]
fn full_32_bytes_and_producer_ids_round_trip() {
    let ring = CompletionRing::new(4);
    let full: [u8; 32] = core::array::from_fn(|i| 0xa0 ^ i as u8);
    ring.try_push(&full, u32::MAX).unwrap();
    ring.try_push(&[], 5).unwrap();
    ring.try_push(&[0xff; 3], 6).unwrap();
    // SAFETY: this test is the only consumer.
    unsafe {
        let polled = ring.poll().unwrap();
        assert_eq!(polled.imm(), &full);
        assert_eq!((polled.len(), polled.producer_id()), (32, u32::MAX));
        let empty = ring.poll().unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.producer_id(), 5);
        ring.release(2).unwrap();

        // A short message after a long one in the same slot leaks nothing of it.
        let mut out = [0x55; 32];
        assert_eq!(ring.pop_into(&mut out), Some((3, 6)));
        assert_eq!(&out[..3], &[0xff; 3]);
        assert_eq!(&out[3..], &[0; 29]);
        assert_eq!(ring.pop_into(&mut out), None);
    }
}

#[test]
fn held_messages_are_found_by_position_until_released() {
    let ring = CompletionRing::new(2);
    // SAFETY: this test is the only consumer; messages are read before their release.
    unsafe {
        for round in 0..5u64 {
            ring.try_push(b"hello", 9).unwrap();
            ring.try_push(b"bye", 3).unwrap();
            let first = ring.poll().unwrap();
            // The data sits 32-byte aligned, where an ImmMessage may be viewed in place.
            assert_eq!(first.imm().as_ptr() as usize % 32, 0);
            assert_eq!(first.pos(), 2 * round);
            assert!(ring.held(first.pos() + 1, 64).is_none(), "not polled yet");
            let second = ring.poll().unwrap();
            // Cut to a few bits, a position still names one held message.
            let again = ring.held(first.pos() & 0b11, 2).unwrap();
            assert_eq!((again.imm(), again.producer_id()), (&b"hello"[..], 9));
            assert_eq!(ring.held(second.pos(), 64).unwrap().imm(), b"bye");
            ring.release(1).unwrap();
            assert!(ring.held(first.pos(), 64).is_none(), "released");
            assert!(ring.held(second.pos(), 64).is_some());
            ring.release(1).unwrap();
            assert!(ring.held(second.pos(), 2).is_none());
        }
    }
}

#[test]
#[should_panic(expected = "outstanding")]
fn pop_into_refuses_to_skip_held_messages() {
    let ring = CompletionRing::new(2);
    ring.try_push(b"a", 0).unwrap();
    ring.try_push(b"b", 0).unwrap();
    // SAFETY: this test is the only consumer.
    unsafe {
        ring.poll().unwrap();
        ring.pop_into(&mut [0; 32]);
    }
}

#[test]
fn reset_empties_the_ring() {
    let mut ring = CompletionRing::new(2);
    ring.try_push(b"a", 0).unwrap();
    ring.try_push(b"b", 0).unwrap();
    // SAFETY: this test is the only consumer.
    unsafe { ring.poll().unwrap() };
    ring.reset();
    assert_eq!((ring.len_hint(), ring.outstanding()), (0, 0));
    ring.try_push(b"c", 0).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { ring.poll() }.unwrap().imm(), b"c");
}

/// Waiting threads yield rather than spin: the test may have more threads than cores.
///
/// `producers` threads each push `per_producer` messages; one consumer checks that every
/// message arrives exactly once and in its producer's order, alternating between holding
/// batches (poll/release) and taking single messages (pop_into).
fn stress(producers: u32, per_producer: u32, capacity: usize) {
    let ring = Arc::new(CompletionRing::new(capacity));
    let senders: Vec<_> = (0..producers)
        .map(|id| {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                for seq in 0..per_producer {
                    while ring.try_push(&message(id, seq), id).is_err() {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();

    let mut next = vec![0u32; producers as usize];
    let total = u64::from(producers) * u64::from(per_producer);
    let mut received = 0u64;
    let mut check = |imm: &[u8], producer_id: u32| {
        let (id, seq) = decode(imm);
        assert_eq!(id, producer_id);
        assert_eq!(seq, next[id as usize], "producer {id} out of order");
        next[id as usize] += 1;
    };
    let mut out = [0; 32];
    while received < total {
        // SAFETY: this thread is the only consumer; messages are read before release.
        unsafe {
            if received % 1000 < 500 {
                match ring.poll() {
                    Some(polled) => {
                        check(polled.imm(), polled.producer_id());
                        received += 1;
                        if ring.outstanding() == 8 {
                            ring.release(8).unwrap();
                        }
                    }
                    None => {
                        ring.release(ring.outstanding()).unwrap();
                        std::thread::yield_now();
                    }
                }
            } else {
                ring.release(ring.outstanding()).unwrap();
                match ring.pop_into(&mut out) {
                    Some((len, producer_id)) => {
                        assert_eq!(len, 8);
                        check(&out[..8], producer_id);
                        received += 1;
                    }
                    None => std::thread::yield_now(),
                }
            }
        }
    }
    for sender in senders {
        sender.join().unwrap();
    }
    // SAFETY: the producers are done and this thread is the only consumer.
    unsafe {
        ring.release(ring.outstanding()).unwrap();
        assert!(ring.poll().is_none());
    }
    assert!(next.iter().all(|&n| n == per_producer));
    assert_eq!(ring.len_hint(), 0);
}

#[test]
#[cfg_attr(miri, ignore = "too long for miri; stress_small covers it")]
fn stress_two_producers() {
    stress(2, 100_000, 64);
}

#[test]
fn stress_small() {
    // Under miri, fewer messages: its interleavings are what it checks, not the volume.
    stress(3, if cfg!(miri) { 40 } else { 200 }, 2);
}
