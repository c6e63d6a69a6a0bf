//! Completion elements are checked: used after their ack, with the wrong kind of context, or
//! forged, they are a fatal error naming the rule, never a read of reused memory.

mod common;

use common::{Path, PathOptions, start_dpa};
use dpakit_abi::args::MsgqPathArgs;
use dpakit_abi::{ErrorCode, bytes_of};
use dpakit_dev::comch::ConsumerCompletion;
use dpakit_dev::runtime::CONSUMER_ACK;
use dpakit_dev::{sys, thread, thread_kernel};
use dpakit_model::dpa::{App, SchedMode};

thread_kernel! {
    /// Reads a message after acking it through a second view of the same context (safe code).
    pub READ_AFTER_ACK: fn read_after_ack(arg: u64) {
        // SAFETY: the test writes a MsgqPathArgs at `arg`.
        let p: &MsgqPathArgs = unsafe { thread::arg_ref(arg) };
        let mut reader = ConsumerCompletion::new(p.consumer_completion);
        let mut acker = ConsumerCompletion::new(p.consumer_completion);
        if let Some(msg) = reader.get() {
            acker.ack(1);
            core::hint::black_box(msg.imm());
        }
        thread::reschedule()
    }
}

thread_kernel! {
    /// Reads a consumer completion element as a DPA completion element.
    pub WRONG_KIND: fn wrong_kind(arg: u64) {
        // SAFETY: the test writes a MsgqPathArgs at `arg`.
        let p: &MsgqPathArgs = unsafe { thread::arg_ref(arg) };
        let mut element = 0;
        // SAFETY: plain values and a valid out-pointer.
        unsafe {
            if sys::doca_dpa_dev_comch_consumer_get_completion(p.consumer_completion.raw(), &mut element) != 0 {
                core::hint::black_box(sys::doca_dpa_dev_get_completion_type(element));
            }
        }
        thread::reschedule()
    }
}

thread_kernel! {
    /// Passes an element no context gave.
    pub FORGED: fn forged(_arg: u64) {
        let mut len = 0;
        // SAFETY: plain values and a valid out-pointer.
        unsafe { core::hint::black_box(sys::doca_dpa_dev_comch_consumer_get_completion_imm(0x1234, &mut len)) };
        thread::reschedule()
    }
}

fn fault_of(kernel: &dpakit_dev::ThreadKernel, mode: SchedMode) -> dpakit_model::Error {
    let app = App::new("elements")
        .thread_kernel(&READ_AFTER_ACK)
        .thread_kernel(&WRONG_KIND)
        .thread_kernel(&FORGED)
        .rpc_kernel(&CONSUMER_ACK);
    let dpa = start_dpa(app, mode);
    let path = Path::new(&dpa, kernel, PathOptions::default(), |a| {
        bytes_of(&a).to_vec()
    });
    path.cpu_producer
        .send(&[7; 32], path.dpa_consumer.id(), 0)
        .unwrap();
    path.wait_fault()
}

const MODES: [SchedMode; 2] = [SchedMode::BusyPoll, SchedMode::Deterministic { seed: 4 }];

#[test]
fn an_element_read_after_its_ack_is_a_fatal_error() {
    for mode in MODES {
        let e = fault_of(&READ_AFTER_ACK, mode);
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{mode:?}");
        assert!(
            e.message().contains(
                "doca_dpa_dev_comch_consumer_get_completion_imm: consumer completion element"
            ) && e.message().contains("is not held: it was acked already"),
            "{mode:?}: {e}"
        );
        assert!(e.message().contains("kernel `read_after_ack`"), "{e}");
    }
}

#[test]
fn an_element_of_another_context_kind_is_a_fatal_error() {
    for mode in MODES {
        let e = fault_of(&WRONG_KIND, mode);
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{mode:?}");
        assert!(
            e.message().contains("doca_dpa_dev_get_completion_type: 0x")
                && e.message().contains("is not a DPA completion element"),
            "{mode:?}: {e}"
        );
    }
}

#[test]
fn a_forged_element_is_a_fatal_error() {
    let e = fault_of(&FORGED, SchedMode::BusyPoll);
    assert!(
        e.message()
            .contains("0x1234 is not a consumer completion element"),
        "{e}"
    );
}
