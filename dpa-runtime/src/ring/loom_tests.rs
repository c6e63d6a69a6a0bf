//! Loom cannot bound a model in which two threads spin waiting for a third (it alternates
//! between the spinners forever), so at most one thread here retries at a time; the others
//! try once and report what they managed.
use super::*;
use crate::sync::spin_loop;
use loom::sync::Arc;
use loom::thread;

/// Runs `f` under loom with at most 4 preemptions unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise: seconds instead of minutes (unbounded passes too, in about three minutes).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(4);
    builder.check(f);
}

/// Loom's DPOR misses the race between a consumer's load of `seq` and a producer's store
/// when the producer loads `seq` in between (tokio-rs/loom#166, #392), which is what
/// happens if the consumer runs first. Yielding lets the producers' stores come first;
/// loom then finds the race and explores the consumer-first orders from there.
fn let_producers_run_first() {
    thread::yield_now();
}

/// Tries once to push each of `seqs`; returns the ones that went in.
fn try_push_each(ring: &CompletionRing, producer_id: u32, seqs: &[u8]) -> Vec<u8> {
    seqs.iter()
        .copied()
        .filter(|&seq| {
            ring.try_push(&[producer_id as u8, seq], producer_id)
                .is_ok()
        })
        .collect()
}

/// Records a polled message, checking its bytes and its producer's order.
fn receive(received: &mut [Vec<u8>; 3], imm: &[u8], producer_id: u32) {
    assert_eq!(imm.len(), 2);
    assert_eq!(u32::from(imm[0]), producer_id);
    let stream = &mut received[producer_id as usize];
    assert!(stream.last() < Some(&imm[1]), "out of order or duplicated");
    stream.push(imm[1]);
}

/// Two producers race for a two-slot ring (three messages, so it fills and wraps) while
/// the consumer polls, holds one message across a poll, and releases. Afterwards it must
/// have received exactly the messages whose push succeeded, each producer's in order.
#[test]
fn two_producers_race_a_holding_consumer() {
    model(|| {
        let ring = Arc::new(CompletionRing::new(2));
        let first = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || try_push_each(&ring, 1, &[0, 1]))
        };
        let second = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || try_push_each(&ring, 2, &[0]))
        };

        let mut received = [Vec::new(), Vec::new(), Vec::new()];
        let_producers_run_first();
        // SAFETY: this thread is the only consumer; messages are read before release.
        unsafe {
            for _ in 0..2 {
                if let Some(polled) = ring.poll() {
                    receive(&mut received, polled.imm(), polled.producer_id());
                }
            }
            ring.release(ring.outstanding()).unwrap();
            if let Some(polled) = ring.poll() {
                receive(&mut received, polled.imm(), polled.producer_id());
            }
            ring.release(ring.outstanding()).unwrap();

            let pushed = [Vec::new(), first.join().unwrap(), second.join().unwrap()];
            while let Some(polled) = ring.poll() {
                receive(&mut received, polled.imm(), polled.producer_id());
                ring.release(1).unwrap();
            }
            assert_eq!(received, pushed);
        }
    });
}

/// The CPU consumer's path on a one-slot ring: pop_into copies and frees in one step.
#[test]
fn pop_into_races_two_producers() {
    model(|| {
        let ring = Arc::new(CompletionRing::new(1));
        let first = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || try_push_each(&ring, 1, &[0]))
        };
        let second = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || try_push_each(&ring, 2, &[0]))
        };

        let mut received = [Vec::new(), Vec::new(), Vec::new()];
        let mut out = [0; 32];
        let_producers_run_first();
        // SAFETY: this thread is the only consumer.
        unsafe {
            if let Some((len, id)) = ring.pop_into(&mut out) {
                receive(&mut received, &out[..len as usize], id);
            }
            let pushed = [Vec::new(), first.join().unwrap(), second.join().unwrap()];
            while let Some((len, id)) = ring.pop_into(&mut out) {
                receive(&mut received, &out[..len as usize], id);
            }
            assert_eq!(received, pushed);
        }
    });
}

/// A held message blocks the producer of the next lap until it is released: loom's cell
/// tracking fails the model if the producer writes the slot while the consumer reads it.
#[test]
fn held_slot_is_not_rewritten() {
    model(|| {
        let ring = Arc::new(CompletionRing::new(1));
        ring.try_push(b"held", 0).unwrap();
        let producer = {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                while ring.try_push(b"next", 1).is_err() {
                    spin_loop();
                }
            })
        };
        // SAFETY: this thread is the only consumer; each message is read before release.
        unsafe {
            let held = ring.poll().unwrap();
            spin_loop();
            assert_eq!(held.imm(), b"held");
            ring.release(1).unwrap();
            let next = loop {
                match ring.poll() {
                    Some(polled) => break polled,
                    None => spin_loop(),
                }
            };
            assert_eq!((next.imm(), next.producer_id()), (&b"next"[..], 1));
            ring.release(1).unwrap();
        }
        producer.join().unwrap();
    });
}
