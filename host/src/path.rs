//! One CPU → DPA → CPU conversation, wired in one call.

use crate::Result;
use crate::comch::{CpuConsumer, CpuProducer, DpaConsumer, DpaProducer, RecvCompletion};
use crate::dpa::{ConsumerCompletion, DevPtr, Dpa, DpaCompletion, DpaThread};
use crate::error::bail;
use crate::msgq::Msgq;
use crate::pe::Pe;
use dpakit_abi::args::{MsgqPathArgs, ServeState};
use dpakit_abi::{ErrorCode, ImmMessage, Immediate, Pod, SubmitFlags, ThreadKernel};
use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Duration;

/// Turns the path's handles into the kernel's argument block.
type ArgsMaker<A> = Box<dyn FnOnce(MsgqPathArgs) -> A>;

/// Configuration of a [`MsgqPath`] whose kernel takes an `A`, carrying requests of type `Req`
/// and responses of type `Resp`.
pub struct MsgqPathBuilder<'a, A: 'static = MsgqPathArgs, Req = ImmMessage, Resp = ImmMessage> {
    dpa: &'a Dpa,
    pe: &'a Pe,
    kernel: ThreadKernel<A>,
    depth: u32,
    flags: SubmitFlags,
    args: Option<ArgsMaker<A>>,
    messages: PhantomData<fn(&Req) -> Resp>,
}

impl<A, Req, Resp> fmt::Debug for MsgqPathBuilder<'_, A, Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgqPathBuilder")
            .field("kernel", &self.kernel.name())
            .field("depth", &self.depth)
            .field("flags", &self.flags)
            .finish()
    }
}

/// Empty polls between two looks at the DPA's fatal error.
const CHECK_EVERY: u32 = 64;

/// Polls [`MsgqPath::recv`] makes before it starts its clock for the timeout.
const POLLS_BEFORE_CLOCK: u32 = 256;

/// A reply of the kernel serving a [`MsgqPath`]: the immediate it sent back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The immediate, zero-filled past `len`.
    pub msg: ImmMessage,
    /// Bytes the DPA sent.
    pub len: u32,
    /// The DPA producer's id.
    pub producer_id: u32,
}

impl Reply {
    /// The bytes the DPA sent.
    pub fn bytes(&self) -> &[u8] {
        &self.msg.as_bytes()[..(self.len as usize).min(dpakit_abi::MAX_IMM_DATA_LEN)]
    }

    /// The message as a `T` of the program's own (sent with the same type on the device):
    /// fails unless exactly `size_of::<T>()` bytes arrived.
    pub fn value<T: Immediate>(&self) -> std::result::Result<T, dpakit_abi::AbiError> {
        dpakit_abi::from_imm_bytes(self.bytes())
    }
}

/// Two MsgQs (CPU→DPA and DPA→CPU), their four endpoints, the completion contexts, and one DPA
/// thread running a kernel that takes a [`MsgqPathArgs`] (echo, ping-pong, …). The kernel may
/// come from any dpakit app: the DPA consumer's first credits are posted with the RPC every
/// app carries ([`App::consumer_ack`](crate::dpa::App::consumer_ack)).
///
/// Objects are declared so that `Drop` tears them down in DOCA's order: endpoints before their
/// queues and completion contexts, the thread last.
///
/// ```
/// use dpakit::dpa::Dpa;
/// use dpakit::pe::Pe;
/// use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
/// use std::time::Duration;
///
/// # fn main() -> dpakit::Result<()> {
/// let dpa = Dpa::builder(&open_dpa_dev()?).app(kit_app()).start()?;
/// let pe = Pe::new()?;
/// // The kit's echo kernel answers every message with the same bytes.
/// let path = MsgqPath::builder(&dpa, &pe, &kernels::ECHO).depth(16).start()?;
/// path.send(b"hello, DPA")?;
/// let reply = path.recv(Duration::from_secs(5))?;
/// assert_eq!(reply.bytes(), b"hello, DPA");
/// # Ok(())
/// # }
/// ```
pub struct MsgqPath<Req = ImmMessage, Resp = ImmMessage> {
    received: Rc<RefCell<VecDeque<Reply>>>,
    cpu_producer: CpuProducer,
    cpu_consumer: CpuConsumer,
    dpa_consumer: DpaConsumer,
    dpa_producer: DpaProducer,
    thread: DpaThread,
    state: DevPtr,
    pe: Pe,
    dpa: Dpa,
    depth: u32,
    empty_polls: Cell<u32>,
    /// Replies landed whose receive is not re-posted yet (see [`MsgqPath::repost`]).
    owed_receives: Rc<Cell<u32>>,
    /// Messages sent and replies landed, for [`MsgqPath::send`]'s receive window.
    sent: Cell<u64>,
    landed: Rc<Cell<u64>>,
    /// What [`request`](MsgqPath::request) sends and [`response`](MsgqPath::response) reads.
    messages: PhantomData<fn(&Req) -> Resp>,
}

impl<Req, Resp> fmt::Debug for MsgqPath<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgqPath")
            .field("thread", &self.thread)
            .field("depth", &self.depth)
            .finish()
    }
}

impl<'a, A: Pod + 'static, Req, Resp> MsgqPathBuilder<'a, A, Req, Resp> {
    /// The types of the path's messages: requests the program sends ([`MsgqPath::request`])
    /// and responses the kernel answers with ([`MsgqPath::response`]), each an [`Immediate`]
    /// (at most 32 bytes, checked at compile time).
    pub fn messages<Req2: Immediate, Resp2: Immediate>(
        self,
    ) -> MsgqPathBuilder<'a, A, Req2, Resp2> {
        MsgqPathBuilder {
            dpa: self.dpa,
            pe: self.pe,
            kernel: self.kernel,
            depth: self.depth,
            flags: self.flags,
            args: self.args,
            messages: PhantomData,
        }
    }

    /// Messages in flight each way: queue sizes, credits and task pools (default 64).
    pub fn depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// Flags the kernel uses for its replies (default FLUSH).
    pub fn submit_flags(mut self, flags: SubmitFlags) -> Self {
        self.flags = flags;
        self
    }

    /// For kernels whose argument block embeds the path ([`DmaOffloadArgs`],
    /// [`RankedPathArgs`], …): builds the kernel's `A` from the path's handles. A kernel that
    /// takes the [`MsgqPathArgs`] itself needs none.
    ///
    /// [`DmaOffloadArgs`]: dpakit_abi::args::DmaOffloadArgs
    /// [`RankedPathArgs`]: dpakit_abi::args::RankedPathArgs
    pub fn args(mut self, make: impl FnOnce(MsgqPathArgs) -> A + 'static) -> Self {
        self.args = Some(Box::new(make));
        self
    }

    /// Creates everything, writes the kernel's argument block, runs the thread, posts the DPA
    /// consumer's credits (RPC) and the CPU consumer's receives.
    pub fn start(self) -> Result<MsgqPath<Req, Resp>> {
        let MsgqPathBuilder {
            dpa,
            pe,
            kernel,
            depth,
            flags,
            args: make,
            messages: _,
        } = self;
        let make: ArgsMaker<A> = match make {
            Some(make) => make,
            None if TypeId::of::<A>() == TypeId::of::<MsgqPathArgs>() => Box::new(|path| {
                *(&path as &dyn Any)
                    .downcast_ref::<A>()
                    .expect("A is MsgqPathArgs")
            }),
            None => bail!(
                InvalidValue,
                "kernel `{}` takes a {}, not the path's MsgqPathArgs: say how to make it with \
                 MsgqPathBuilder::args",
                kernel.name(),
                std::any::type_name::<A>()
            ),
        };
        let to_dpa = Msgq::builder(dpa.dev()).dpa_consumer(dpa).start()?;
        let from_dpa = Msgq::builder(dpa.dev()).dpa_producer(dpa).start()?;
        // The kernel's writable state: it reports one reply in depth/2 (see ServeState).
        let state = DevBlock(
            dpa,
            dpa.mem_alloc_init(&ServeState {
                report_every: (depth / 2).max(1),
                sends: 0,
            })?,
        );
        let (thread, args) = DpaThread::builder(dpa, &kernel)
            .local_storage(state.1)
            .start_deferred()?;
        let consumer_completion = ConsumerCompletion::builder(dpa)
            .max_num_recv(depth)
            .dpa_thread(&thread)
            .start()?;
        let dpa_consumer = DpaConsumer::builder(&to_dpa, &consumer_completion)
            .dev_num_recv(depth)
            .start()?;
        // Room for a full window of send reports before the kernel releases them.
        let producer_completion = DpaCompletion::start(dpa, 2 * depth, None)?;
        let dpa_producer = DpaProducer::builder(&from_dpa, &producer_completion)
            .dev_num_send(depth)
            .start()?;

        // The producer connects to the PE first: progress looks at contexts in connection
        // order, so a reply, seen by the consumer, ends the pass that delivers it.
        let cpu_producer = CpuProducer::builder(&to_dpa, pe)
            .num_send_tasks(depth)
            .start()?;
        let received = Rc::new(RefCell::new(VecDeque::with_capacity(depth as usize)));
        let owed_receives = Rc::new(Cell::new(0));
        let landed = Rc::new(Cell::new(0));
        let (sink, owed, seen) = (received.clone(), owed_receives.clone(), landed.clone());
        let cpu_consumer = CpuConsumer::builder(&from_dpa, pe)
            .num_recv_tasks(depth)
            .on_recv(move |c: &RecvCompletion<'_>| {
                // Receives flushed by a stop carry no message.
                if c.status != ErrorCode::Success {
                    return;
                }
                // The receive is owed back at once (re-posted before the next send or poll), so
                // replies keep landing while the program sends more than the depth ahead; the
                // queue grows past the depth only then.
                owed.set(owed.get() + 1);
                seen.set(seen.get() + 1);
                let msg = ImmMessage::from_bytes(c.imm).unwrap_or(ImmMessage::ZEROED);
                sink.borrow_mut().push_back(Reply {
                    msg,
                    len: c.imm.len() as u32,
                    producer_id: c.producer_id,
                });
            })
            .start()?;

        let block = MsgqPathArgs {
            consumer_completion: consumer_completion.dpa_handle(),
            consumer: dpa_consumer.dpa_handle(),
            producer: dpa_producer.dpa_handle(),
            producer_completion: producer_completion.dpa_handle(),
            cpu_consumer_id: cpu_consumer.id(),
            submit_flags: flags,
        };
        args.write(&make(block))?;
        drop((to_dpa, from_dpa, consumer_completion, producer_completion));
        thread.run()?;
        dpa.rpc(dpa.app().consumer_ack(), (dpa_consumer.dpa_handle(), depth))?;
        for i in 0..u64::from(depth) {
            cpu_consumer.post_recv(i)?;
        }
        Ok(MsgqPath {
            received,
            cpu_producer,
            cpu_consumer,
            dpa_consumer,
            dpa_producer,
            thread,
            state: state.keep(),
            pe: pe.clone(),
            dpa: dpa.clone(),
            depth,
            empty_polls: Cell::new(0),
            owed_receives,
            sent: Cell::new(0),
            landed,
            messages: PhantomData,
        })
    }
}

impl MsgqPath {
    /// A path served by `kernel` on `dpa`, driven by `pe`. The kernel takes the path's
    /// [`MsgqPathArgs`], or an `A` built from them ([`MsgqPathBuilder::args`]). Its messages are
    /// [`ImmMessage`]s unless [`MsgqPathBuilder::messages`] says otherwise.
    pub fn builder<'a, A>(
        dpa: &'a Dpa,
        pe: &'a Pe,
        kernel: &ThreadKernel<A>,
    ) -> MsgqPathBuilder<'a, A> {
        MsgqPathBuilder {
            dpa,
            pe,
            kernel: *kernel,
            depth: 64,
            flags: SubmitFlags::FLUSH,
            args: None,
            messages: PhantomData,
        }
    }
}

impl<Req: Immediate, Resp: Immediate> MsgqPath<Req, Resp> {
    /// Sends a request (its `size_of::<Req>()` bytes), as [`send`](Self::send) does.
    #[inline]
    pub fn request(&self, req: &Req) -> Result<()> {
        self.send(dpakit_abi::bytes_of(req))
    }

    /// Waits for the next response, as [`recv`](Self::recv) does: `INVALID_VALUE` if the kernel
    /// answered with another size than `size_of::<Resp>()`.
    pub fn response(&self, timeout: Duration) -> Result<Resp> {
        Ok(self.recv(timeout)?.value::<Resp>()?)
    }

    /// A request and its response.
    pub fn call(&self, req: &Req, timeout: Duration) -> Result<Resp> {
        self.request(req)?;
        self.response(timeout)
    }
}

impl<Req, Resp> MsgqPath<Req, Resp> {
    /// Sends an immediate to the kernel. Waits (progressing) while every send task is in flight;
    /// a message never jumps the queue or gets lost. Replies keep landing meanwhile, so a
    /// program may send any number of messages before it receives: the replies wait in order.
    #[inline]
    pub fn send(&self, imm: &[u8]) -> Result<()> {
        while self.cpu_producer.in_flight() >= self.depth {
            // The kernel answers only into posted receives: give back the ones replies used.
            self.repost()?;
            self.pe.progress();
            self.check_now_and_then()?;
        }
        // Every message may be answered, and an answer needs a posted receive: if the ones
        // still owed are needed for the replies that may come, post them before sending.
        let awaited = self.sent.get().saturating_sub(self.landed.get()) + 1;
        if awaited + u64::from(self.owed_receives.get()) > u64::from(self.depth) {
            self.repost()?;
        }
        self.cpu_producer.send(imm, self.dpa_consumer.id(), 0)?;
        self.sent.set(self.sent.get() + 1);
        // The message is on its way: re-post receives while the DPA works on it. A failure
        // here is not the send's; the next receive reports it.
        let _ = self.repost();
        Ok(())
    }

    /// Re-posts the receives of replies handed out so far. Done after a send or before a poll
    /// rather than when a reply is taken, to keep it off the round trip's critical path. Replies
    /// only arrive in a poll, and every poll comes after a repost, so none waits for a receive
    /// that was owed.
    #[inline]
    fn repost(&self) -> Result<()> {
        // Most calls find nothing owed: keep that check inline and the posting out of line.
        if self.owed_receives.get() == 0 {
            return Ok(());
        }
        self.repost_owed()
    }

    #[inline(never)]
    fn repost_owed(&self) -> Result<()> {
        while self.owed_receives.get() > 0 {
            self.cpu_consumer.post_recv(0)?;
            self.owed_receives.set(self.owed_receives.get() - 1);
        }
        Ok(())
    }

    /// Sends a typed message.
    #[inline]
    pub fn send_msg(&self, msg: &ImmMessage) -> Result<()> {
        self.send(msg.as_bytes())
    }

    /// Sends a value of the program's own immediate type (its bytes, `size_of::<T>()` of them);
    /// the kernel reads it with `dpakit_abi::from_imm_bytes`.
    #[inline]
    pub fn send_value<T: Immediate>(&self, value: &T) -> Result<()> {
        self.send(dpakit_abi::bytes_of(value))
    }

    /// Progresses once and returns the oldest reply, if one arrived. Its receive is re-posted by
    /// the next send or poll.
    /// Fails with the DPA's fatal error if the kernel faulted (looked at every few empty polls:
    /// asking costs a call into the device).
    #[inline]
    pub fn try_recv(&self) -> Result<Option<Reply>> {
        if self.received.borrow().is_empty() {
            self.repost()?;
            self.pe.progress();
        }
        let next = self.received.borrow_mut().pop_front();
        match next {
            Some(r) => Ok(Some(r)),
            None => {
                self.check_now_and_then()?;
                Ok(None)
            }
        }
    }

    /// [`Dpa::check`] on one empty poll in [`CHECK_EVERY`].
    #[inline]
    fn check_now_and_then(&self) -> Result<()> {
        let polls = self.empty_polls.get().wrapping_add(1);
        self.empty_polls.set(polls);
        if polls % CHECK_EVERY == 0 {
            self.dpa.check()?;
        }
        Ok(())
    }

    /// Waits for the next reply: spins on progress, then sleeps on the PE's notification handle.
    /// Fails with the DPA's fatal error if the kernel faults, or TIME_OUT naming the kernel and
    /// what its thread is doing.
    pub fn recv(&self, timeout: Duration) -> Result<Reply> {
        // A reply usually comes within a few polls: poll before reading the clock, which costs
        // as much as several polls, and without a pause between polls, which delays seeing the
        // reply by about as much as the kernel takes to answer.
        for _ in 0..POLLS_BEFORE_CLOCK {
            if let Some(r) = self.try_recv()? {
                return Ok(r);
            }
        }
        let received = &self.received;
        let mut fault = None;
        self.pe
            .progress_until(timeout, || {
                if !received.borrow().is_empty() {
                    return true;
                }
                if let Err(e) = self.check_now_and_then() {
                    fault = Some(e);
                    return true;
                }
                false
            })
            .map_err(|e| self.no_reply(e, timeout))?;
        if let Some(e) = fault {
            return Err(e);
        }
        Ok(self.try_recv()?.expect("a reply is queued"))
    }

    /// A wait for a reply that failed: a TIME_OUT names the kernel and what its thread is doing
    /// (for how long its activation has run, on the soft device).
    #[cold]
    fn no_reply(&self, e: crate::Error, timeout: Duration) -> crate::Error {
        if e.code() != ErrorCode::TimeOut {
            return e;
        }
        let kernel = self.thread.kernel();
        let doing = match self.thread.describe() {
            Ok(text) => format!(": {text}"),
            Err(_) => String::new(),
        };
        crate::Error::new(
            ErrorCode::TimeOut,
            format!("MsgqPath::recv: no reply from kernel `{kernel}` within {timeout:?}{doing}"),
        )
    }

    /// Sends `msg` and waits for the reply.
    pub fn round_trip(&self, msg: &ImmMessage, timeout: Duration) -> Result<Reply> {
        self.send_msg(msg)?;
        self.recv(timeout)
    }

    /// The id replies carry: the DPA producer's.
    pub fn producer_id(&self) -> u32 {
        self.dpa_producer.id()
    }

    /// The DPA thread serving the path.
    pub fn thread(&self) -> &DpaThread {
        &self.thread
    }

    /// Messages in flight each way.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The DPA context.
    pub fn dpa(&self) -> &Dpa {
        &self.dpa
    }

    /// The progress engine driving the path's CPU endpoints.
    pub fn pe(&self) -> &Pe {
        &self.pe
    }

    /// The kernel's [`ServeState`] (its thread local storage), read back from device memory:
    /// `sends` counts replies sent (or, for the sink kernel, messages consumed).
    pub fn kernel_state(&self) -> Result<ServeState> {
        let mut bytes = [0u8; size_of::<ServeState>()];
        self.dpa.d2h_memcpy(&mut bytes, self.state)?;
        Ok(dpakit_abi::from_imm_bytes(&bytes)?)
    }
}

/// A block of DPA memory freed on drop unless [`kept`](DevBlock::keep).
struct DevBlock<'a>(&'a Dpa, DevPtr);

impl DevBlock<'_> {
    fn keep(self) -> DevPtr {
        let ptr = self.1;
        std::mem::forget(self);
        ptr
    }
}

impl Drop for DevBlock<'_> {
    fn drop(&mut self) {
        // Only on a failed start, whose error is what the caller needs to see.
        let _ = self.0.mem_free(self.1);
    }
}

impl<Req, Resp> Drop for MsgqPath<Req, Resp> {
    fn drop(&mut self) {
        // A kernel that never ends its activation makes this TIME_OUT after a bound; said, not
        // ignored.
        if let Err(e) = self.thread.stop() {
            eprintln!("dpakit: MsgqPath dropped: stopping its DPA thread: {e}");
        }
        // The state block was allocated by this path and is freed once (the thread frees its
        // argument block); nothing can fail that a destructor could act on.
        let _ = self.dpa.mem_free(self.state);
    }
}
