//! The device C ABI: the DOCA device functions (`#[no_mangle] doca_dpa_dev_*`), implemented by
//! the soft device for kernels compiled for the host and served to the interpreter in ISA mode.
//!
//! This layer sits above the DPA runtime (`crate::dpa`: activations, scheduler, threads,
//! completions, memory) and Comch, and nothing below names it: the runtime reaches these
//! functions by their C symbols only (`crate::dpa::device_symbols`), as kernels do.
//!
//! Each one finds the running activation, resolves its handles through the DPA's tables and
//! validates what the hardware would not: a bad handle, acking more than was posted or read, a
//! send with no receive posted, a DMA range outside its mmap. A violation is a fatal error on
//! the DPA context and ends the activation; it never corrupts memory or loses a message silently.

mod abi_check;
mod dpa;
mod sync_event;
pub(crate) use dpa::*;
pub(crate) use sync_event::*;

use crate::comch::{CpuConsumerShared, DpaConsumerShared, DpaProducerShared, PRODUCER_ID_BITS};
use crate::dpa::objects;
use crate::error::ErrorCode;
use crate::limits::MAX_IMM_DATA_LEN;
use crate::ring::Polled;
use crate::sync::Ordering;
use crate::table::Table;
use dpakit_abi::SubmitFlags;
use dpakit_abi::soft::Ending;
use dpakit_dpa_runtime::completion::{
    ConsumerCompletionShared, DpaCompletionShared, Notifier, encode_completion,
};
use dpakit_dpa_runtime::current::{Current, with_current};
use dpakit_dpa_runtime::element::{self, ElementKind};
use dpakit_dpa_runtime::memory::with_mmaps;
use dpakit_dpa_runtime::{DpaShared, Kind};
use std::ffi::{c_char, c_int};

/// `DOCA_DPA_DEV_COMP_SEND`.
const COMP_SEND: u32 = 0;

#[inline]
fn lookup<'a, T: Send + Sync>(
    cur: &Current<'a>,
    table: impl FnOnce(&'a DpaShared) -> &'a Table<T>,
    kind: Kind,
    handle: u64,
    what: &str,
) -> &'a T {
    let dpa = cur.dpa;
    match dpa.index_of(handle, kind).and_then(|i| table(dpa).get(i)) {
        Some(obj) => obj,
        None => cur.fault(
            ErrorCode::InvalidValue,
            format!("invalid {what} handle {handle:#x}: not a live {what} of this DPA (destroyed, or from another context)"),
        ),
    }
}

#[inline]
fn consumer_completion<'a>(cur: &Current<'a>, h: u64) -> &'a ConsumerCompletionShared {
    lookup(
        cur,
        |d| &d.handles.consumer_completions,
        Kind::ConsumerCompletion,
        h,
        "consumer completion",
    )
}

#[inline]
fn dpa_consumer<'a>(cur: &Current<'a>, h: u64) -> &'a DpaConsumerShared {
    lookup(
        cur,
        |d| &objects(d).dpa_consumers,
        Kind::DpaConsumer,
        h,
        "DPA consumer",
    )
}

#[inline]
fn dpa_producer<'a>(cur: &Current<'a>, h: u64) -> &'a DpaProducerShared {
    lookup(
        cur,
        |d| &objects(d).dpa_producers,
        Kind::DpaProducer,
        h,
        "DPA producer",
    )
}

#[inline]
fn dpa_completion<'a>(cur: &Current<'a>, h: u64) -> &'a DpaCompletionShared {
    lookup(
        cur,
        |d| &d.handles.completions,
        Kind::Completion,
        h,
        "DPA completion",
    )
}

/// A completion context's ring has one reader: the thread attached to the context, or — for a
/// context with no thread — whoever polls it first. Anyone else polling would race that reader.
fn require_owner(cur: &Current<'_>, notifier: &Notifier, function: &str) {
    let me = cur.thread.map(|t| t.index);
    if !notifier.claim_reader(me) {
        cur.fault(
            ErrorCode::NotPermitted,
            format!("{function}: this completion context is read by another DPA thread; each context has one reader (the thread attached to it)"),
        );
    }
}

/// Reads the immediate a device function was given.
fn imm_arg<'b>(cur: &Current<'_>, imm: *const u8, len: u32, function: &str) -> &'b [u8] {
    if len as usize > MAX_IMM_DATA_LEN {
        cur.fault(
            ErrorCode::InvalidValue,
            format!(
                "{function}: immediate of {len} bytes exceeds the limit of {MAX_IMM_DATA_LEN} bytes"
            ),
        );
    }
    if len == 0 {
        return &[];
    }
    if imm.is_null() {
        cur.fault(
            ErrorCode::InvalidValue,
            format!("{function}: null immediate pointer with length {len}"),
        );
    }
    // SAFETY: the kernel passes a pointer to `len` (≤ 32) readable bytes, as the device API
    // requires; the bytes are copied before the call returns.
    unsafe { std::slice::from_raw_parts(imm, len as usize) }
}

/// The send half shared by post_send_imm_only and dma_copy: deliver `imm` to CPU consumer
/// `consumer_id`, then account for the send queue and report a completion.
fn send_to_cpu(
    cur: &Current<'_>,
    producer: &DpaProducerShared,
    consumer_id: u32,
    imm: &[u8],
    flags: u32,
    function: &str,
) {
    let flags = match SubmitFlags::from_bits(flags) {
        Ok(f) => f,
        Err(e) => cur.fault(ErrorCode::InvalidValue, format!("{function}: {e}")),
    };
    let Some(consumer) = producer.cpu_consumers.get_by_id(consumer_id, |c| c.id) else {
        cur.fault(
            ErrorCode::NotFound,
            format!("{function}: no CPU consumer with id {consumer_id} on the producer's MsgQ"),
        )
    };
    if imm.len() > consumer.imm_data_len as usize {
        cur.fault(
            ErrorCode::InvalidValue,
            format!(
                "{function}: immediate of {} bytes exceeds CPU consumer {consumer_id}'s imm_data_len of {}",
                imm.len(),
                consumer.imm_data_len
            ),
        );
    }
    deliver(cur, consumer, producer.id, imm, consumer_id, function);

    // Send queue: sends without a report hold their slot until a later send reports.
    if flags.contains(SubmitFlags::OPTIMIZE_REPORTS) {
        let unreported = producer.unreported.fetch_add(1, Ordering::Relaxed) + 1;
        if unreported > producer.dev_num_send {
            cur.fault(
                ErrorCode::Full,
                format!(
                    "{function}: {unreported} sends with OPTIMIZE_REPORTS in a row overflow the \
                     producer's send queue of {} (dev_num_send); let a send report at least once \
                     per {} sends",
                    producer.dev_num_send, producer.dev_num_send
                ),
            );
        }
    } else {
        producer.unreported.store(0, Ordering::Relaxed);
        let completion = &producer.completion;
        if completion
            .ring
            .try_push(&encode_completion(COMP_SEND, producer.user_data), 0)
            .is_err()
        {
            cur.fault(
                ErrorCode::Full,
                format!(
                    "{function}: the producer's DPA completion queue ({} entries) overflowed; ack \
                     completions with doca_dpa_dev_completion_ack or send with OPTIMIZE_REPORTS",
                    completion.ring.capacity()
                ),
            );
        }
        completion.notifier.published();
    }
}

fn deliver(
    cur: &Current<'_>,
    consumer: &CpuConsumerShared,
    producer_id: u32,
    imm: &[u8],
    consumer_id: u32,
    function: &str,
) {
    if !consumer.claim_receive() {
        cur.fault(
            ErrorCode::Empty,
            format!(
                "{function}: CPU consumer {consumer_id} has no receive posted; the message would be \
                 lost. Post receives on the CPU consumer first (check with \
                 doca_dpa_dev_comch_producer_is_consumer_empty)"
            ),
        );
    }
    // Posted receives never exceed the ring's capacity, so a claimed receive always has a slot.
    if consumer.ring.try_push(imm, producer_id).is_err() {
        cur.fault(
            ErrorCode::Unexpected,
            format!("{function}: CPU consumer {consumer_id} ring full despite a posted receive"),
        );
    }
    consumer.waker.wake();
}

// ---- Comch MsgQ, DPA consumer side ----

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_consumer_ack(consumer: u64, num_msgs: u32) {
    with_current("doca_dpa_dev_comch_consumer_ack", |cur| {
        let c = dpa_consumer(cur, consumer);
        if let Err(current) = c.ack(num_msgs) {
            cur.fault(
                ErrorCode::InvalidValue,
                format!(
                    "doca_dpa_dev_comch_consumer_ack({num_msgs}) with {current} receives already \
                     posted exceeds the consumer's queue of {} (doca_comch_consumer_set_dev_num_recv)",
                    c.max_recv
                ),
            );
        }
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_consumer_get_completion(
    consumer_comp: u64,
    comp_element: *mut u64,
) -> c_int {
    with_current("doca_dpa_dev_comch_consumer_get_completion", |cur| {
        let cc = consumer_completion(cur, consumer_comp);
        require_owner(
            cur,
            &cc.notifier,
            "doca_dpa_dev_comch_consumer_get_completion",
        );
        // SAFETY: only the attached thread polls (checked above), one activation at a time.
        match unsafe { cc.ring.poll() } {
            Some(polled) => {
                cc.count_polled(polled.producer_id() >> PRODUCER_ID_BITS);
                let slot = cur.dpa.index_of(consumer_comp, Kind::ConsumerCompletion);
                let e = element::encode(
                    ElementKind::Consumer,
                    cur.dpa.id,
                    slot.unwrap_or_default(),
                    polled.pos(),
                );
                // SAFETY: the kernel passes a valid out-pointer.
                unsafe { comp_element.write(e) };
                1
            }
            None => 0,
        }
    })
}

/// The message a consumer completion element names: checked to be held by a live consumer
/// completion of this DPA that the caller reads.
fn consumer_message<'a>(cur: &Current<'a>, e: u64, function: &str) -> Polled<'a> {
    let slot = element::slot_of(cur, e, ElementKind::Consumer, function);
    let cc = consumer_completion(cur, cur.dpa.handle(Kind::ConsumerCompletion, slot));
    require_owner(cur, &cc.notifier, function);
    element::held(cur, &cc.ring, e, ElementKind::Consumer, function)
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_consumer_get_completion_imm(
    comp_element: u64,
    imm_length: *mut u32,
) -> *const u8 {
    const F: &str = "doca_dpa_dev_comch_consumer_get_completion_imm";
    with_current(F, |cur| {
        let message = consumer_message(cur, comp_element, F);
        let imm = message.imm();
        if !imm_length.is_null() {
            // SAFETY: the kernel passes a valid out-pointer.
            unsafe { imm_length.write(imm.len() as u32) };
        }
        imm.as_ptr()
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_consumer_get_completion_producer_id(
    comp_element: u64,
) -> u32 {
    const F: &str = "doca_dpa_dev_comch_consumer_get_completion_producer_id";
    with_current(F, |cur| {
        consumer_message(cur, comp_element, F).producer_id() & ((1 << PRODUCER_ID_BITS) - 1)
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_consumer_completion_ack(
    consumer_comp: u64,
    num_comp: u64,
) {
    with_current("doca_dpa_dev_comch_consumer_completion_ack", |cur| {
        let cc = consumer_completion(cur, consumer_comp);
        require_owner(
            cur,
            &cc.notifier,
            "doca_dpa_dev_comch_consumer_completion_ack",
        );
        // SAFETY: only the attached thread acks (checked above), one activation at a time.
        if let Err(e) = unsafe { cc.ring.release(num_comp) } {
            cur.fault(
                ErrorCode::InvalidValue,
                format!("doca_dpa_dev_comch_consumer_completion_ack({num_comp}): {e}"),
            );
        }
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_consumer_completion_request_notification(
    consumer_comp: u64,
) {
    with_current(
        "doca_dpa_dev_comch_consumer_completion_request_notification",
        |cur| {
            let cc = consumer_completion(cur, consumer_comp);
            cc.notifier
                .request(|| crate::sync_hint::has_unpolled(&cc.ring));
        },
    )
}

// ---- Comch MsgQ, DPA producer side ----

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_producer_is_consumer_empty(
    producer: u64,
    consumer_id: u32,
) -> c_int {
    with_current("doca_dpa_dev_comch_producer_is_consumer_empty", |cur| {
        let p = dpa_producer(cur, producer);
        match p.cpu_consumers.get_by_id(consumer_id, |c| c.id) {
            Some(c) => c_int::from(c.is_empty()),
            None => cur.fault(
                ErrorCode::NotFound,
                format!("doca_dpa_dev_comch_producer_is_consumer_empty: no CPU consumer with id {consumer_id}"),
            ),
        }
    })
}

#[unsafe(no_mangle)]
pub(crate) extern "C" fn doca_dpa_dev_comch_producer_post_send_imm_only(
    producer: u64,
    consumer_id: u32,
    imm: *const u8,
    imm_length: u32,
    flags: u32,
) {
    const F: &str = "doca_dpa_dev_comch_producer_post_send_imm_only";
    with_current(F, |cur| {
        let p = dpa_producer(cur, producer);
        let imm = imm_arg(cur, imm, imm_length, F);
        send_to_cpu(cur, p, consumer_id, imm, flags, F);
    })
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn doca_dpa_dev_comch_producer_dma_copy(
    producer: u64,
    consumer_id: u32,
    dst_mmap: u32,
    dst_addr: u64,
    src_mmap: u32,
    src_addr: u64,
    length: usize,
    imm: *const u8,
    imm_length: u32,
    flags: u32,
) {
    const F: &str = "doca_dpa_dev_comch_producer_dma_copy";
    with_current(F, |cur| {
        let p = dpa_producer(cur, producer);
        let imm = imm_arg(cur, imm, imm_length, F);
        let len = length as u64;
        let copied = with_mmaps(cur.dpa, [dst_mmap, src_mmap], |[dst, src]| {
            let dst = dst.ok_or_else(|| {
                (
                    ErrorCode::InvalidValue,
                    format!("{F}: invalid destination mmap handle {dst_mmap:#x}"),
                )
            })?;
            let src = src.ok_or_else(|| {
                (
                    ErrorCode::InvalidValue,
                    format!("{F}: invalid source mmap handle {src_mmap:#x}"),
                )
            })?;
            if !src.readable {
                return Err((
                    ErrorCode::NotPermitted,
                    format!("{F}: the source mmap lacks local read access"),
                ));
            }
            if !dst.writable {
                return Err((
                    ErrorCode::NotPermitted,
                    format!("{F}: the destination mmap needs DOCA_ACCESS_FLAG_LOCAL_READ_WRITE"),
                ));
            }
            if !src.contains(src_addr, len) {
                return Err((
                    ErrorCode::InvalidValue,
                    format!(
                        "{F}: source range {src_addr:#x}+{len} is outside the source mmap \
                         [{:#x}, {:#x})",
                        src.base,
                        src.base + src.len
                    ),
                ));
            }
            if !dst.contains(dst_addr, len) {
                return Err((
                    ErrorCode::InvalidValue,
                    format!(
                        "{F}: destination range {dst_addr:#x}+{len} is outside the destination \
                         mmap [{:#x}, {:#x})",
                        dst.base,
                        dst.base + dst.len
                    ),
                ));
            }
            if len > 0 && src_addr < dst_addr + len && dst_addr < src_addr + len {
                return Err((
                    ErrorCode::InvalidValue,
                    format!("{F}: source and destination ranges overlap"),
                ));
            }
            // SAFETY: both ranges lie inside started mmaps whose views keep the memory
            // registered while this closure runs, and they do not overlap (checked above).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src_addr as usize as *const u8,
                    dst_addr as usize as *mut u8,
                    length,
                )
            };
            Ok(())
        });
        // Faults end the activation: only once the views are let go.
        if let Err((code, message)) = copied {
            cur.fault(code, message);
        }
        send_to_cpu(cur, p, consumer_id, imm, flags, F);
    })
}
