//! End-to-end echo through the soft device: every message arrives exactly once and in order.

mod common;

use common::{DEPTH, Path, echo_app, start_dpa};
use dpakit_abi::{Echo, ImmMessage};
use dpakit_model::dpa::SchedMode;

fn run_echo(mode: SchedMode, total: u64) {
    let dpa = start_dpa(echo_app(), mode);
    let path = Path::echo(&dpa);
    let mut sent = 0u64;
    let mut next_expected = 0u64;
    while next_expected < total {
        // Keep the pipeline full: one receive and one send task per message in flight.
        while sent < total
            && sent - next_expected < u64::from(DEPTH)
            && path.cpu_producer.in_flight() < DEPTH
        {
            let msg = ImmMessage::new(
                sent as u32,
                &Echo {
                    token: sent,
                    timestamp_ns: 0,
                    tag: !sent,
                },
            );
            path.cpu_producer
                .send(msg.as_bytes(), path.dpa_consumer.id(), sent)
                .unwrap();
            sent += 1;
        }
        path.pe.progress();
        path.dpa.check().unwrap();
        while let Some((bytes, len, producer)) = path.received.borrow_mut().pop_front() {
            assert_eq!(len, 32);
            assert_eq!(producer, path.dpa_producer.id());
            let msg = ImmMessage::from_bytes(&bytes[..len]).unwrap();
            let echo: Echo = msg.view().unwrap();
            assert_eq!(
                echo.token, next_expected,
                "out of order, lost or duplicated"
            );
            assert_eq!(echo.tag, !next_expected);
            assert_eq!(msg.header.seq, next_expected as u32);
            next_expected += 1;
            path.cpu_consumer.post_recv(next_expected).unwrap();
        }
    }
    if let SchedMode::Deterministic { .. } = mode {
        // Nothing extra arrives: once the DPA is idle and the PE has seen everything, nothing
        // runs unless asked.
        dpa.run_until_idle();
        path.pe.progress();
        assert!(path.received.borrow().is_empty());
    }
    assert_eq!(path.dpa.check(), Ok(()));
}

#[test]
fn deterministic_echo_delivers_each_message_once_and_nothing_extra() {
    run_echo(SchedMode::Deterministic { seed: 5 }, 20_000);
}

#[test]
fn a_million_messages_arrive_exactly_once_in_order() {
    run_echo(SchedMode::BusyPoll, 1_000_000);
}

#[test]
fn sleeping_workers_echo_too() {
    run_echo(SchedMode::Sleep, 20_000);
}

#[test]
fn deterministic_mode_echoes() {
    run_echo(SchedMode::Deterministic { seed: 7 }, 5_000);
}
