//! The debugger's side of ISA mode: where an activation stops for GDB and waits to be resumed.
//!
//! With `DPAKIT_SOFT_GDB=HOST:PORT` the first DPA context that starts in ISA mode waits for a
//! debugger ([`gdb`](super::gdb) serves the protocol) and is debugged from then on; others run
//! as always. An activation of the debugged program looks at every instruction: a breakpoint,
//! a step done, a halt (Ctrl-C in gdb, or another thread stopping: all-stop) or a fatal error
//! parks it here, on its own worker thread, with its registers. While parked it serves the
//! debugger's memory requests through its own bus — the same checks as the kernel's accesses —
//! until it is resumed. A kernel not in an activation has no registers, so GDB's threads are the
//! activations parked here.
//!
//! The hub is a mutex and a condition variable: the debugger's path only. A program run without
//! `DPAKIT_SOFT_GDB` never reaches it.

use super::bus::DeviceBus;
use crate::current::Current;
use crate::error::{ErrorCode, Result, err};
use crate::sync::Ordering;
use crate::sync::plain::{AtomicBool, AtomicU64};
use dpakit_rv::{Access, AmoOp, Bus, Direct, MemFault};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The signals a fatal error shows as in gdb: gdbstub's, in the remote protocol's numbering
/// (GDB's own, which is not Linux's for every signal: SIGSYS is 12 there, 31 on Linux).
pub(crate) use gdbstub::common::Signal;

/// Why an activation stopped, as GDB hears it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StopWhy {
    /// At a breakpoint, before the instruction.
    Breakpoint,
    /// One instruction stepped.
    Stepped,
    /// An access touched a watched range: `addr` is where, `write` whether it wrote.
    Watch { addr: u64, write: bool },
    /// Halted: Ctrl-C in gdb, or another thread stopped.
    Halted,
    /// A fatal error, before the DPA context gets it: the signal GDB shows (`SIGSEGV` for an
    /// access fault, `SIGILL`, `SIGABRT` for a panic, `SIGXCPU` for the instruction budget,
    /// `SIGSYS` for a bad device call, `SIGTRAP` for an `ebreak`) and the error.
    Fatal { signal: Signal, what: String },
}

/// How the debugger lets a parked activation go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resume {
    Continue,
    Step,
}

/// A memory request the debugger hands a parked activation.
#[derive(Debug)]
enum Request {
    Read { addr: u64, len: usize },
    Write { addr: u64, bytes: Vec<u8> },
}

/// An activation parked for the debugger.
#[derive(Debug)]
pub(crate) struct Parked {
    /// x0..x31, then pc.
    pub regs: [u64; 33],
    pub kernel: &'static str,
    pub why: StopWhy,
    request: Option<Request>,
    /// A read's bytes (as many as could be read), or as many zeros as bytes written.
    reply: Option<Vec<u8>>,
    resume: Option<Resume>,
}

/// What the debugger and the debugged program's activations share.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// The program the debugger follows (`Program::id`), its load bias and its image file.
    pub program: Option<(u64, u64, PathBuf)>,
    pub breakpoints: Vec<u64>,
    pub watchpoints: Vec<Watchpoint>,
    pub parked: BTreeMap<usize, Parked>,
    /// Stops not reported to GDB yet.
    pub stops: VecDeque<usize>,
    /// Threads told to step whose activation ended within the step (a device call that ends
    /// it): their next activation stops before its first instruction.
    stepping: BTreeSet<usize>,
    /// The debugger left: parked activations go on, nothing stops again.
    pub detached: bool,
    /// gdb let the program start (its first `continue` or step): until then the program waits
    /// in the load of its image, with its breakpoints being set.
    pub started: bool,
}

/// The debugger's hub: one per process.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    state: Mutex<State>,
    changed: Condvar,
    /// Set while every running activation is to stop (all-stop): read before each instruction.
    halt: AtomicBool,
    /// Bumped at each change of the breakpoints: an activation copies them again only then.
    breakpoints_gen: AtomicU64,
    /// The debugger left: activations started since run at full speed.
    gone: AtomicBool,
}

static HUB: OnceLock<Hub> = OnceLock::new();

/// The process's hub, once a debugger was asked for.
pub(crate) fn hub() -> Option<&'static Hub> {
    HUB.get()
}

/// How long a parked activation or the debugger's thread waits before it looks again (a
/// detach, a closed connection): the bound of every wait here.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Creates the process's hub (once).
pub(crate) fn install() -> &'static Hub {
    HUB.get_or_init(Hub::default)
}

/// The address `dpakit_soft_set_gdb` set, if any.
pub(crate) fn configured_address() -> Option<String> {
    GDB_ADDRESS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// GDB's thread for the DPA while no activation is parked (before the first, or with every
/// thread between activations): no registers, no memory, but gdb needs a thread to attach to.
pub(crate) const IDLE_TID: usize = 0x7fff_ffff;

/// Where the first ISA-mode start waits for gdb, set by the program (`dpakit_soft_set_gdb`); it
/// wins over `DPAKIT_SOFT_GDB`.
static GDB_ADDRESS: Mutex<Option<String>> = Mutex::new(None);

/// `dpakit_soft_set_gdb`: the first DPA context started in ISA mode from now on waits for gdb at
/// `address` (`HOST:PORT`), as `DPAKIT_SOFT_GDB` says; `None` goes back to the environment.
/// `BAD_STATE` once a program is debugged: one debugger per process, from its start.
pub fn set_gdb_address(address: Option<&str>) -> Result<()> {
    use std::net::ToSocketAddrs;
    if HUB.get().is_some() {
        return Err(err(
            ErrorCode::BadState,
            "a DPA context is already debugged: gdb is set before the first ISA-mode start",
        ));
    }
    if let Some(address) = address
        && address
            .to_socket_addrs()
            .map_or(true, |mut a| a.next().is_none())
    {
        return Err(err(
            ErrorCode::InvalidValue,
            format!("`{address}` is not an address to listen on for gdb (HOST:PORT)"),
        ));
    }
    *GDB_ADDRESS.lock().unwrap_or_else(|e| e.into_inner()) = address.map(str::to_string);
    Ok(())
}

/// The thread id GDB knows the running activation by: a DPA thread's index plus one, a
/// launched thread's rank past 1,000,000, an RPC 999,999.
pub(crate) fn tid(cur: &Current<'_>) -> usize {
    match (cur.thread, cur.launch) {
        (Some(thread), _) => thread.index + 1,
        (None, Some(rank)) => 1_000_000 + rank.rank as usize,
        (None, None) => 999_999,
    }
}

/// A watched range of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Watchpoint {
    pub addr: u64,
    pub len: u64,
    pub read: bool,
    pub write: bool,
}

impl Watchpoint {
    /// Whether an access of `size` bytes at `addr` touches the range the way it watches.
    fn hit(&self, addr: u64, size: u8, write: bool) -> bool {
        let touches = addr < self.addr.saturating_add(self.len)
            && self.addr < addr.saturating_add(u64::from(size));
        touches && if write { self.write } else { self.read }
    }
}

/// The bus of a debugged activation's instruction: the kernel's own, with every access looked
/// at against the watchpoints (no direct access, which would bypass the look).
pub(crate) struct WatchBus<'b, B> {
    pub inner: &'b mut B,
    pub watchpoints: &'b [Watchpoint],
    /// The first watched access of the instruction, if any.
    pub hit: Option<(u64, bool)>,
}

impl<B> WatchBus<'_, B> {
    #[inline]
    fn look(&mut self, addr: u64, size: u8, write: bool) {
        if self.hit.is_none() && self.watchpoints.iter().any(|w| w.hit(addr, size, write)) {
            self.hit = Some((addr, write));
        }
    }
}

impl<B: Bus> Bus for WatchBus<'_, B> {
    fn fetch16(&mut self, addr: u64) -> std::result::Result<u16, MemFault> {
        self.inner.fetch16(addr)
    }
    fn load(&mut self, addr: u64, size: u8) -> std::result::Result<u64, MemFault> {
        let value = self.inner.load(addr, size)?;
        self.look(addr, size, false);
        Ok(value)
    }
    fn store(&mut self, addr: u64, size: u8, value: u64) -> std::result::Result<(), MemFault> {
        self.inner.store(addr, size, value)?;
        self.look(addr, size, true);
        Ok(())
    }
    fn amo(
        &mut self,
        addr: u64,
        size: u8,
        op: AmoOp,
        operand: u64,
    ) -> std::result::Result<u64, MemFault> {
        let old = self.inner.amo(addr, size, op, operand)?;
        self.look(addr, size, true);
        Ok(old)
    }
    fn cas(
        &mut self,
        addr: u64,
        size: u8,
        expected: u64,
        new: u64,
    ) -> std::result::Result<bool, MemFault> {
        let stored = self.inner.cas(addr, size, expected, new)?;
        self.look(addr, size, stored);
        Ok(stored)
    }
    fn code_is_fixed(&self, addr: u64, len: u8) -> bool {
        self.inner.code_is_fixed(addr, len)
    }
    fn direct(&mut self, _addr: u64, _size: u8, _access: Access) -> Option<Direct> {
        None
    }
    fn ecall(&mut self, pc: u64, x: &mut [u64; 32], instret: u64) -> bool {
        self.inner.ecall(pc, x, instret)
    }
    fn stamp(&self) -> u64 {
        self.inner.stamp()
    }
}

/// What an activation of the debugged program keeps between instructions: its copy of the
/// breakpoints (copied again when they change), a step under way, and the pc it was resumed
/// at (the breakpoint there was reported already).
#[derive(Debug)]
pub(crate) struct Watch {
    tid: usize,
    breakpoints: Vec<u64>,
    pub watchpoints: Vec<Watchpoint>,
    /// A watched access of the last instruction: the next look stops.
    pub watch_hit: Option<(u64, bool)>,
    generation: u64,
    step_pending: bool,
    step_done: bool,
    resumed_at: Option<u64>,
}

impl Watch {
    /// Why to stop before the instruction at `pc`, if the debugger wants it.
    #[inline]
    pub(crate) fn stop_before(&mut self, hub: &Hub, pc: u64) -> Option<StopWhy> {
        if let Some((addr, write)) = self.watch_hit.take() {
            self.step_done = false;
            return Some(StopWhy::Watch { addr, write });
        }
        if std::mem::take(&mut self.step_done) {
            return Some(StopWhy::Stepped);
        }
        let generation = hub.breakpoints_gen.load(Ordering::Acquire);
        if generation != self.generation {
            let state = hub.lock();
            self.breakpoints.clone_from(&state.breakpoints);
            self.watchpoints.clone_from(&state.watchpoints);
            self.generation = generation;
        }
        let resumed_here = self.resumed_at.take() == Some(pc);
        if hub.halt.load(Ordering::Acquire) {
            return Some(StopWhy::Halted);
        }
        (!resumed_here && self.breakpoints.contains(&pc)).then_some(StopWhy::Breakpoint)
    }

    /// After a park: how the thread goes on from `pc`.
    pub(crate) fn resumed(&mut self, hub: &Hub, resume: Resume, pc: u64) {
        self.step_pending = resume == Resume::Step;
        self.resumed_at = Some(pc);
        if self.step_pending {
            hub.lock().stepping.insert(self.tid);
        }
    }

    /// One instruction ran: a step under way is done.
    #[inline]
    pub(crate) fn ran(&mut self) {
        if std::mem::take(&mut self.step_pending) {
            self.step_done = true;
        }
    }
}

impl Hub {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes whoever waits on the hub.
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Waits for a change, at most `at_most`.
    pub(crate) fn wait<'a>(
        &self,
        guard: MutexGuard<'a, State>,
        at_most: Duration,
    ) -> MutexGuard<'a, State> {
        match self.changed.wait_timeout(guard, at_most) {
            Ok((guard, _)) => guard,
            Err(e) => e.into_inner().0,
        }
    }

    /// Whether the activations of program `id` are followed; the first program to ask is.
    pub(crate) fn follows(&self, id: u64, bias: u64, image: &Path) -> bool {
        let mut state = self.lock();
        if state.detached {
            return false;
        }
        match &state.program {
            Some((followed, ..)) => *followed == id,
            None => {
                state.program = Some((id, bias, image.to_path_buf()));
                true
            }
        }
    }

    /// Whether gdb is still there: an activation starting after a detach runs undebugged.
    pub(crate) fn attached(&self) -> bool {
        !self.gone.load(Ordering::Acquire)
    }

    /// An activation's watch: it stops at once when its thread's step ended the activation
    /// before.
    pub(crate) fn watch(&self, tid: usize) -> Watch {
        let step_done = self.lock().stepping.contains(&tid);
        Watch {
            tid,
            breakpoints: Vec::new(),
            watchpoints: Vec::new(),
            watch_hit: None,
            generation: u64::MAX,
            step_pending: false,
            step_done,
            resumed_at: None,
        }
    }

    /// Stops every running activation before its next instruction (all-stop).
    pub(crate) fn request_halt(&self) {
        self.halt.store(true, Ordering::Release);
    }

    /// The breakpoints changed: activations copy them again.
    pub(crate) fn breakpoints_changed(&self) {
        self.breakpoints_gen.fetch_add(1, Ordering::AcqRel);
    }

    /// Parks activation `tid` for the debugger, its registers `x` and `pc`, its memory reached
    /// through `bus`, until the debugger resumes it; returns how. Registers the debugger wrote
    /// are in `x` and `pc` again on return. After a detach, returns `Continue` at once.
    pub(crate) fn park(
        &self,
        tid: usize,
        kernel: &'static str,
        x: &mut [u64; 32],
        pc: &mut u64,
        bus: &mut DeviceBus<'_>,
        why: StopWhy,
    ) -> Resume {
        let mut state = self.lock();
        if state.detached {
            return Resume::Continue;
        }
        let mut regs = [0u64; 33];
        regs[..32].copy_from_slice(x);
        regs[32] = *pc;
        state.stepping.remove(&tid);
        let parked = Parked {
            regs,
            kernel,
            why,
            request: None,
            reply: None,
            resume: None,
        };
        state.parked.insert(tid, parked);
        state.stops.push_back(tid);
        // All-stop: the others stop before their next instruction.
        self.request_halt();
        self.notify();
        loop {
            if state.detached {
                state.parked.remove(&tid);
                return Resume::Continue;
            }
            let Some(me) = state.parked.get_mut(&tid) else {
                return Resume::Continue;
            };
            if let Some(request) = me.request.take() {
                me.reply = Some(serve(request, bus));
                self.notify();
                continue;
            }
            if let Some(resume) = me.resume {
                let regs = me.regs;
                state.parked.remove(&tid);
                x.copy_from_slice(&regs[..32]);
                x[0] = 0;
                *pc = regs[32];
                return resume;
            }
            state = self.wait(state, LOOK_EVERY);
        }
    }

    /// Reads `len` bytes at `addr` as parked activation `tid` may: fewer where it may not read
    /// on. `None` when `tid` is not parked.
    pub(crate) fn read(&self, tid: usize, addr: u64, len: usize) -> Option<Vec<u8>> {
        self.ask(tid, Request::Read { addr, len })
    }

    /// Writes `bytes` at `addr` as parked activation `tid` may; how many were written.
    pub(crate) fn write(&self, tid: usize, addr: u64, bytes: &[u8]) -> Option<usize> {
        let bytes = bytes.to_vec();
        self.ask(tid, Request::Write { addr, bytes })
            .map(|w| w.len())
    }

    /// Hands `request` to parked activation `tid` and waits for its reply.
    fn ask(&self, tid: usize, request: Request) -> Option<Vec<u8>> {
        let mut state = self.lock();
        let me = state.parked.get_mut(&tid)?;
        me.request = Some(request);
        me.reply = None;
        self.notify();
        loop {
            let me = state.parked.get_mut(&tid)?;
            if let Some(reply) = me.reply.take() {
                return Some(reply);
            }
            state = self.wait(state, LOOK_EVERY);
        }
    }

    /// Lets the parked activations go as `actions` says; those without an action continue, or
    /// stay parked when `others_stay` (gdb's scheduler locking). The halt is lifted, so
    /// activations not parked run on.
    pub(crate) fn resume(&self, actions: &BTreeMap<usize, Resume>, others_stay: bool) {
        let mut state = self.lock();
        self.halt.store(false, Ordering::Release);
        state.started = true;
        for (tid, parked) in state.parked.iter_mut() {
            match actions.get(tid) {
                Some(action) => parked.resume = Some(*action),
                None if !others_stay => parked.resume = Some(Resume::Continue),
                None => {}
            }
        }
        state.stops.clear();
        self.notify();
    }

    /// The debugger left (a detach, a closed connection): everything parked goes on, and
    /// nothing stops for it again.
    pub(crate) fn detach(&self) {
        let mut state = self.lock();
        state.detached = true;
        self.gone.store(true, Ordering::Release);
        state.breakpoints.clear();
        state.watchpoints.clear();
        state.stepping.clear();
        self.breakpoints_changed();
        self.halt.store(false, Ordering::Release);
        self.notify();
    }
}

/// Serves one memory request on a parked activation's bus: byte by byte past the first
/// refusal, so GDB gets what can be read.
fn serve(request: Request, bus: &mut DeviceBus<'_>) -> Vec<u8> {
    match request {
        Request::Read { addr, len } => {
            let mut out = vec![0u8; len];
            if bus.read_bytes(addr, &mut out).is_ok() {
                return out;
            }
            out.clear();
            for i in 0..len as u64 {
                match bus.load(addr.wrapping_add(i), 1) {
                    Ok(byte) => out.push(byte as u8),
                    Err(_) => break,
                }
            }
            out
        }
        Request::Write { addr, bytes } => {
            let written = bytes
                .iter()
                .enumerate()
                .take_while(|(i, b)| {
                    bus.store(addr.wrapping_add(*i as u64), 1, u64::from(**b))
                        .is_ok()
                })
                .count();
            vec![0; written]
        }
    }
}
