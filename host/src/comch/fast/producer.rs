//! `doca_comch_producer` on a connection.

use super::Slots;
use crate::UserData;
use crate::comch::{Connection, SendCompletion, start_on_pe};
use crate::ctx::{self, CtxState, StateChangedCb};
use crate::error::{Result, bail, doca};
use crate::mmap::AccessFlags;
use crate::pe::Pe;
use crate::pulled::Pulled;
use dpakit_abi::{ErrorCode, MAX_IMM_DATA_LEN};
use dpakit_sys as sys;
use std::cell::RefCell;
use std::fmt;
use std::mem::ManuallyDrop;

type SendCb = Box<dyn FnMut(SendCompletion)>;

struct ProducerInner {
    raw: *mut sys::doca_comch_producer,
    ctx: *mut sys::doca_ctx,
    pe: Pe,
    /// Free buffer slots.
    free: RefCell<Vec<u32>>,
    /// The user data of each slot's send.
    user_data: RefCell<Vec<u64>>,
    on_send: RefCell<Option<SendCb>>,
    on_state_changed: Option<StateChangedCb>,
    /// Sends that completed with an error (flushed by a stop, or refused by the peer).
    failed: std::cell::Cell<u64>,
    /// With `pull_completions`: completions not taken yet (each keeps a buffer from being
    /// loaned, so there are never more than the buffers).
    pulled: Option<Pulled<SendCompletion>>,
}

impl crate::comch::HasStateCallback for ProducerInner {
    fn state_callback(&self) -> Option<&StateChangedCb> {
        self.on_state_changed.as_ref()
    }
}

/// `doca_comch_producer` on a connection: loans buffers of its own memory to write and sends
/// them to the peer's consumers ([`Consumer`](super::Consumer)'s example sends with one).
///
/// ```no_run
/// # fn send(producer: &dpakit::comch::Producer, consumer_id: u32) -> dpakit::Result<()> {
/// // Loan, write in place, send: no copy beyond the one into the peer's buffer.
/// let mut loan = producer.loan(4096)?;
/// loan.as_mut_slice().fill(0xab);
/// loan.send(consumer_id, &7u64.to_le_bytes(), 7)?;
/// # Ok(())
/// # }
/// ```
#[doc(alias = "doca_comch_producer")]
pub struct Producer {
    /// Taken only by `Drop`, which hands them to the teardown.
    inner: ManuallyDrop<Box<ProducerInner>>,
    id: u32,
    slots: ManuallyDrop<Slots>,
}

impl fmt::Debug for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer").field("id", &self.id).finish()
    }
}

unsafe extern "C" fn send_finished(
    task: *mut sys::doca_comch_producer_task_send,
    task_data: sys::doca_data,
    ctx_data: sys::doca_data,
) {
    // SAFETY: the producer's user data is its boxed inner state.
    let inner = unsafe { &*ctx_data.ptr.cast::<ProducerInner>() };
    // SAFETY: a completed task of ours.
    let raw = unsafe {
        let t = sys::doca_comch_producer_task_send_as_task(task);
        let status = sys::doca_task_get_status(t);
        sys::doca_task_free(t);
        status
    };
    let slot = crate::data_bits(task_data) as u32;
    let user_data = inner
        .user_data
        .borrow()
        .get(slot as usize)
        .copied()
        .unwrap_or(0);
    inner.free.borrow_mut().push(slot);
    let status = ErrorCode::from_raw(raw as i32).unwrap_or(ErrorCode::Unknown);
    if status != ErrorCode::Success {
        inner.failed.set(inner.failed.get() + 1);
    }
    let done = SendCompletion {
        user_data: UserData::from_raw(user_data),
        status,
    };
    if let Some(pulled) = &inner.pulled {
        pulled.push(done);
        return;
    }
    inner.pe.catch(|| {
        if let Some(cb) = inner.on_send.borrow_mut().as_mut() {
            cb(done);
        }
    });
}

/// Configuration of a [`Producer`].
pub struct ProducerBuilder<'a> {
    conn: Connection,
    dev: &'a crate::dev::Dev,
    pe: &'a Pe,
    num_send: u32,
    buf_size: usize,
    on_send: Option<SendCb>,
    pull: bool,
    on_state_changed: Option<StateChangedCb>,
}

impl fmt::Debug for ProducerBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProducerBuilder")
            .field("num_send", &self.num_send)
            .finish()
    }
}

impl<'a> ProducerBuilder<'a> {
    /// How many sends may be in flight (`doca_comch_producer_task_send_set_conf`; default 16).
    pub fn num_send(mut self, n: u32) -> Self {
        self.num_send = n;
        self
    }

    /// The size of each loaned buffer (default 4096).
    pub fn buf_size(mut self, size: usize) -> Self {
        self.buf_size = size;
        self
    }

    /// Send completions (success, or the error: `INVALID_VALUE` for more than the consumer's
    /// posted buffer takes, `NOT_FOUND` for a consumer that is gone).
    pub fn on_send_complete(mut self, cb: impl FnMut(SendCompletion) + 'static) -> Self {
        self.on_send = Some(Box::new(cb));
        self
    }

    /// Hands completions out as values instead of to a callback: [`Producer::try_completion`]
    /// and [`Producer::next_completion`] take them. A completion not taken yet keeps one buffer
    /// from being loaned, so nothing is dropped: a loan is `NO_MEMORY` while the sends in flight
    /// and the completions not taken hold every buffer.
    pub fn pull_completions(mut self) -> Self {
        self.pull = true;
        self
    }

    /// `doca_ctx_set_state_changed_cb`.
    pub fn on_state_changed(mut self, cb: impl Fn(CtxState, CtxState) + 'static) -> Self {
        self.on_state_changed = Some(Box::new(cb));
        self
    }

    /// `doca_comch_producer_create` + configuration + start.
    pub fn start(self) -> Result<Producer> {
        if self.pull && self.on_send.is_some() {
            bail!(
                InvalidValue,
                "a producer reports completions to its callback or as values, not both: \
                 drop on_send_complete or pull_completions"
            );
        }
        let slots = Slots::new(
            self.dev,
            self.num_send,
            self.buf_size,
            AccessFlags::LOCAL_READ_WRITE,
        )?;
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_producer_create(self.conn.as_raw(), &mut raw))?;
        // SAFETY: a producer we just created.
        let ctx = unsafe { sys::doca_comch_producer_as_ctx(raw) };
        let mut producer = Producer {
            inner: ManuallyDrop::new(Box::new(ProducerInner {
                raw,
                ctx,
                pe: self.pe.clone(),
                free: RefCell::new((0..self.num_send).rev().collect()),
                user_data: RefCell::new(vec![0; self.num_send as usize]),
                on_send: RefCell::new(self.on_send),
                on_state_changed: self.on_state_changed,
                failed: std::cell::Cell::new(0),
                pulled: self.pull.then(|| Pulled::new(self.num_send)),
            })),
            id: 0,
            slots: ManuallyDrop::new(slots),
        };
        doca!(doca_comch_producer_task_send_set_conf(
            raw,
            Some(send_finished),
            Some(send_finished),
            self.num_send
        ))?;
        start_on_pe(ctx, &**producer.inner, self.pe)?;
        doca!(doca_comch_producer_get_id(raw, &mut producer.id))?;
        Ok(producer)
    }
}

/// A buffer loaned by [`Producer::loan`]: write it, then [`send`](Self::send) it. Dropping it
/// unsent returns it.
pub struct Loan<'a> {
    producer: &'a Producer,
    slot: u32,
    len: usize,
}

impl fmt::Debug for Loan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loan").field("len", &self.len).finish()
    }
}

impl Loan<'_> {
    /// The bytes to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let (base, _) = self.producer.slots.mmap.range();
        // SAFETY: the slot is loaned to us alone until sent or dropped; inside the mmap.
        unsafe {
            std::slice::from_raw_parts_mut(
                base.add(self.slot as usize * self.producer.slots.size),
                self.len,
            )
        }
    }

    /// `doca_comch_producer_task_send_alloc_init` + `doca_task_submit`: sends the buffer and
    /// `imm` to consumer `consumer_id`; the completion callback gets `user_data`.
    pub fn send(self, consumer_id: u32, imm: &[u8], user_data: impl Into<UserData>) -> Result<()> {
        let p = self.producer;
        let slot = self.slot;
        let len = self.len;
        std::mem::forget(self);
        let r = p.submit(slot, len, consumer_id, imm, user_data.into().raw());
        if r.is_err() {
            p.inner.free.borrow_mut().push(slot);
        }
        r
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        self.producer.inner.free.borrow_mut().push(self.slot);
    }
}

impl Producer {
    /// A producer on `conn` (a live connection of a server or client on this thread), with
    /// memory registered on `dev`, driven by `pe`.
    pub fn builder<'a>(
        conn: Connection,
        dev: &'a crate::dev::Dev,
        pe: &'a Pe,
    ) -> ProducerBuilder<'a> {
        ProducerBuilder {
            conn,
            dev,
            pe,
            num_send: 16,
            buf_size: 4096,
            on_send: None,
            pull: false,
            on_state_changed: None,
        }
    }

    /// `doca_comch_producer_get_id`: what consumers see as the sender.
    #[doc(alias = "doca_comch_producer_get_id")]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// A buffer of `len` bytes to write and send; `NO_MEMORY` while every buffer is in
    /// flight, `INVALID_VALUE` beyond the configured buffer size.
    pub fn loan(&self, len: usize) -> Result<Loan<'_>> {
        if len > self.slots.size {
            bail!(
                InvalidValue,
                "a {len}-byte buffer is larger than the producer's buffers ({} bytes)",
                self.slots.size
            );
        }
        // Completions not taken yet each keep a free buffer back.
        let untaken = self.inner.pulled.as_ref().map_or(0, Pulled::len);
        let slot = {
            let mut free = self.inner.free.borrow_mut();
            if free.len() > untaken {
                free.pop()
            } else {
                None
            }
        };
        let Some(slot) = slot else {
            bail!(
                NoMemory,
                "every buffer is in flight{}",
                if untaken > 0 {
                    " or held by a completion not taken yet: take completions with \
                     try_completion or next_completion"
                } else {
                    ": progress to complete sends"
                }
            );
        };
        Ok(Loan {
            producer: self,
            slot,
            len,
        })
    }

    /// Copies `data` into a loaned buffer and sends it.
    pub fn send(
        &self,
        consumer_id: u32,
        data: &[u8],
        imm: &[u8],
        user_data: impl Into<UserData>,
    ) -> Result<()> {
        let mut loan = self.loan(data.len())?;
        loan.as_mut_slice().copy_from_slice(data);
        loan.send(consumer_id, imm, user_data)
    }

    fn submit(
        &self,
        slot: u32,
        len: usize,
        consumer_id: u32,
        imm: &[u8],
        user_data: u64,
    ) -> Result<()> {
        if imm.len() > MAX_IMM_DATA_LEN {
            bail!(
                InvalidValue,
                "{} bytes of immediate data; a consumer takes at most {MAX_IMM_DATA_LEN}",
                imm.len()
            );
        }
        let buf = self.slots.bufs[slot as usize];
        let (base, _) = self.slots.mmap.range();
        // SAFETY: the slot's start, inside the mmap.
        let data = unsafe { base.add(slot as usize * self.slots.size) };
        doca!(doca_buf_set_data(buf, data.cast(), len))?;
        let mut task = std::ptr::null_mut();
        doca!(doca_comch_producer_task_send_alloc_init(
            self.inner.raw,
            buf,
            // DOCA's signature takes a mutable pointer; the bytes are only read (copied).
            imm.as_ptr().cast_mut(),
            imm.len() as u32,
            consumer_id,
            &mut task
        ))?;
        self.inner.user_data.borrow_mut()[slot as usize] = user_data;
        // SAFETY: a task we just allocated.
        let t = unsafe { sys::doca_comch_producer_task_send_as_task(task) };
        // SAFETY: as above.
        unsafe {
            sys::doca_task_set_user_data(
                t,
                sys::doca_data {
                    u64_: u64::from(slot),
                },
            )
        };
        if let Err(e) = doca!(doca_task_submit(t)) {
            // SAFETY: not submitted, so ours.
            unsafe { sys::doca_task_free(t) };
            return Err(e);
        }
        Ok(())
    }

    /// Sends that completed with an error so far (with or without a completion callback): a
    /// stop flushes the sends still waiting for a receive, a peer may refuse one.
    pub fn failed_sends(&self) -> u64 {
        self.inner.failed.get()
    }

    /// Sends in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.bufs.len() - self.inner.free.borrow().len()
    }

    /// The oldest completion not taken yet, without progressing, for a producer built with
    /// [`pull_completions`](ProducerBuilder::pull_completions); `None` if there is none.
    pub fn try_completion(&self) -> Option<SendCompletion> {
        self.inner.pulled.as_ref()?.pop()
    }

    /// The next completion: progresses the PE (asleep on its notification handle when idle)
    /// until one is there; `None` after `timeout`. `SHUTDOWN` on Ctrl-C; `BAD_STATE` for a
    /// producer not built with [`pull_completions`](ProducerBuilder::pull_completions).
    pub fn next_completion(&self, timeout: std::time::Duration) -> Result<Option<SendCompletion>> {
        crate::pulled::next_of(
            self.inner.pulled.as_ref(),
            &self.inner.pe,
            "Producer::next_completion",
            "this producer was not built with pull_completions: its completions go to its \
             callback, or are counted (failed_sends)",
            timeout,
        )
    }

    /// `doca_ctx_get_state`.
    pub fn state(&self) -> Result<CtxState> {
        ctx::state(self.inner.ctx)
    }

    /// `doca_ctx_stop`, progressing until idle: sends still waiting complete with an error.
    /// Inside a callback of its PE it returns once the stop is requested, and the producer
    /// becomes idle through later progress.
    pub fn stop(&self) -> Result<()> {
        ctx::stop(self.inner.ctx, Some(&self.inner.pe))
    }
}

impl Drop for Producer {
    #[doc(alias = "doca_comch_producer_destroy")]
    fn drop(&mut self) {
        // SAFETY: each taken once, here; neither is used again.
        let (inner, slots) = unsafe {
            (
                ManuallyDrop::take(&mut self.inner),
                ManuallyDrop::take(&mut self.slots),
            )
        };
        let (raw, ctx, pe) = (inner.raw, inner.ctx, inner.pe.clone());
        // The buffers outlive the producer: sends in flight read them.
        ctx::teardown(
            ctx,
            &pe,
            "Comch producer",
            move || doca!(doca_comch_producer_destroy(raw)),
            (inner, slots),
        );
    }
}
