//! The GDB remote protocol for ISA mode (`gdbstub`): `DPAKIT_SOFT_GDB=HOST:PORT` makes the first
//! DPA context started in ISA mode wait for gdb there, then serves it on a thread of its own.
//! The target is the hub's ([`debug`](super::debug)): GDB's threads are the activations parked
//! there, its memory is what they may reach, its breakpoints are checked by the interpreter
//! before each instruction (the image's code is never patched), and the image's load bias is
//! what `qOffsets` answers, so gdb relocates the image's symbols and DWARF itself.

use super::debug::{self, Hub, IDLE_TID, Resume, StopWhy, Watchpoint};
use crate::error::{ErrorCode, Result, err};
use gdbstub::common::Pid;
use gdbstub::common::{Signal, Tid};
use gdbstub::conn::{Connection, ConnectionExt};
use gdbstub::stub::run_blocking::{self, BlockingEventLoop, WaitForStopReasonError};
use gdbstub::stub::{GdbStub, MultiThreadStopReason};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, HwBreakpoint, HwBreakpointOps, HwWatchpoint, HwWatchpointOps,
    SwBreakpoint, SwBreakpointOps, WatchKind,
};
use gdbstub::target::ext::exec_file::{ExecFile, ExecFileOps};
use gdbstub::target::ext::section_offsets::{Offsets, SectionOffsets, SectionOffsetsOps};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use gdbstub::target::{Target, TargetError, TargetResult};
use gdbstub_arch::riscv::Riscv64;
use gdbstub_arch::riscv::reg::RiscvCoreRegs;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The variable that names where the soft device waits for gdb.
pub const GDB_ENV: &str = "DPAKIT_SOFT_GDB";

/// How long the first ISA-mode start waits for gdb to connect before it fails.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the first ISA-mode start waits for gdb to connect and start the program.
const START_TIMEOUT: Duration = Duration::from_secs(600);

/// How often the wait for gdb's first `continue` looks again.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// At a program's load: with `DPAKIT_SOFT_GDB` set, the first program waits for gdb (the
/// protocol's thread starts once gdb is there) and is followed; any later one is not.
pub(crate) fn follow_if_asked(id: u64, bias: u64, image: &Path) -> Result<bool> {
    let Some(addr) = debug::configured_address()
        .or_else(|| std::env::var_os(GDB_ENV).map(|a| a.to_string_lossy().into_owned()))
    else {
        return Ok(false);
    };
    static SERVED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    let served = SERVED.get_or_init(|| {
        // The program is followed before gdb asks anything.
        debug::install().follows(id, bias, image);
        serve(&addr, debug::install())
    });
    if let Err(why) = served {
        return Err(err(ErrorCode::NotConnected, why.clone()));
    }
    let Some(hub) = debug::hub() else {
        return Ok(false);
    };
    if !hub.follows(id, bias, image) {
        return Ok(false);
    }
    // The program starts when gdb says so: breakpoints set before are in place for the first
    // activation.
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    let mut state = hub.lock();
    while !state.started && !state.detached {
        if std::time::Instant::now() > deadline {
            return Err(err(
                ErrorCode::TimeOut,
                format!(
                    "{}: gdb did not start the program (continue) in {} s",
                    GDB_ENV,
                    START_TIMEOUT.as_secs()
                ),
            ));
        }
        state = hub.wait(state, LOOK_EVERY);
    }
    Ok(true)
}

/// Waits (at most [`ATTACH_TIMEOUT`]) for gdb at `addr` and serves it on a new thread; the hub
/// exists from then on. Called once, by the first ISA-mode start that finds `DPAKIT_SOFT_GDB`.
pub(crate) fn serve(addr: &str, hub: &'static Hub) -> Result<(), String> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| format!("{GDB_ENV}={addr}: cannot listen there: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("{GDB_ENV}={addr}: {e}"))?;
    eprintln!(
        "dpakit soft device: waiting for gdb on {addr} (gdb-multiarch IMAGE -ex 'target remote {addr}')"
    );
    let deadline = Instant::now() + ATTACH_TIMEOUT;
    let stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    return Err(format!(
                        "{GDB_ENV}={addr}: no debugger connected in {} s",
                        ATTACH_TIMEOUT.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("{GDB_ENV}={addr}: accepting gdb failed: {e}")),
        }
    };
    let _ = stream.set_nodelay(true);
    std::thread::Builder::new()
        .name("dpakit-gdb".into())
        .spawn(move || {
            let mut target = DpaTarget {
                hub,
                actions: BTreeMap::new(),
                others_stay: false,
            };
            let gdb = GdbStub::new(stream);
            if let Err(e) = gdb.run_blocking::<EventLoop>(&mut target) {
                eprintln!("dpakit soft device: the gdb session ended: {e}");
            }
            // However it ended, the program goes on.
            hub.detach();
        })
        .map_err(|e| format!("cannot start the gdb thread: {e}"))?;
    Ok(())
}

/// GDB's view of the debugged program.
struct DpaTarget {
    hub: &'static Hub,
    /// The resume actions of the next `vCont`.
    actions: BTreeMap<usize, Resume>,
    /// The `vCont` names no default action: threads without one stay stopped.
    others_stay: bool,
}

fn tid_of(tid: Tid) -> usize {
    tid.get()
}

impl Target for DpaTarget {
    type Arch = Riscv64;
    type Error = String;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_section_offsets(&mut self) -> Option<SectionOffsetsOps<'_, Self>> {
        Some(self)
    }

    fn support_exec_file(&mut self) -> Option<ExecFileOps<'_, Self>> {
        Some(self)
    }

    // Breakpoints are the interpreter's: nothing is written into the code.
    fn guard_rail_implicit_sw_breakpoints(&self) -> bool {
        true
    }
}

impl MultiThreadBase for DpaTarget {
    fn read_registers(
        &mut self,
        regs: &mut RiscvCoreRegs<u64>,
        tid: Tid,
    ) -> TargetResult<(), Self> {
        let state = self.hub.lock();
        match state.parked.get(&tid_of(tid)) {
            Some(parked) => {
                regs.x.copy_from_slice(&parked.regs[..32]);
                regs.pc = parked.regs[32];
            }
            // A DPA thread between activations, or the idle DPA: no kernel runs, no registers.
            None => *regs = RiscvCoreRegs::default(),
        }
        Ok(())
    }

    fn write_registers(&mut self, regs: &RiscvCoreRegs<u64>, tid: Tid) -> TargetResult<(), Self> {
        let mut state = self.hub.lock();
        let parked = state
            .parked
            .get_mut(&tid_of(tid))
            .ok_or(TargetError::NonFatal)?;
        parked.regs[..32].copy_from_slice(&regs.x);
        parked.regs[0] = 0;
        parked.regs[32] = regs.pc;
        Ok(())
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8], tid: Tid) -> TargetResult<usize, Self> {
        let bytes = self
            .hub
            .read(tid_of(tid), start, data.len())
            .ok_or(TargetError::NonFatal)?;
        data[..bytes.len()].copy_from_slice(&bytes);
        Ok(bytes.len())
    }

    fn write_addrs(&mut self, start: u64, data: &[u8], tid: Tid) -> TargetResult<(), Self> {
        let written = self
            .hub
            .write(tid_of(tid), start, data)
            .ok_or(TargetError::NonFatal)?;
        if written == data.len() {
            Ok(())
        } else {
            Err(TargetError::Errno(14))
        }
    }

    /// The activations parked in the debugger, and every DPA thread of the followed context
    /// (between activations, without registers); the idle DPA if there is neither.
    fn list_active_threads(&mut self, found: &mut dyn FnMut(Tid)) -> Result<(), Self::Error> {
        let waiting = dpa_threads(self.hub);
        let state = self.hub.lock();
        let mut tids: BTreeSet<usize> = state.parked.keys().copied().collect();
        tids.extend(waiting.iter().map(|t| t.index + 1));
        if tids.is_empty() {
            tids.insert(IDLE_TID);
        }
        tids.into_iter().filter_map(Tid::new).for_each(found);
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }

    fn support_thread_extra_info(&mut self) -> Option<ThreadExtraInfoOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadResume for DpaTarget {
    fn resume(&mut self) -> Result<(), Self::Error> {
        let actions = std::mem::take(&mut self.actions);
        self.hub
            .resume(&actions, std::mem::take(&mut self.others_stay));
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), Self::Error> {
        self.actions.clear();
        self.others_stay = false;
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        self.actions.insert(tid_of(tid), Resume::Continue);
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

/// A `vCont` that names no action for the other threads: they stay stopped.
impl MultiThreadSchedulerLocking for DpaTarget {
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), Self::Error> {
        self.others_stay = true;
        Ok(())
    }
}

impl MultiThreadSingleStep for DpaTarget {
    fn set_resume_action_step(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        self.actions.insert(tid_of(tid), Resume::Step);
        Ok(())
    }
}

impl Breakpoints for DpaTarget {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_breakpoint(&mut self) -> Option<HwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_watchpoint(&mut self) -> Option<HwWatchpointOps<'_, Self>> {
        Some(self)
    }
}

/// The range gdb watches, and how.
fn watchpoint(addr: u64, len: u64, kind: WatchKind) -> Watchpoint {
    let (read, write) = match kind {
        WatchKind::Write => (false, true),
        WatchKind::Read => (true, false),
        WatchKind::ReadWrite => (true, true),
    };
    Watchpoint {
        addr,
        len,
        read,
        write,
    }
}

impl HwWatchpoint for DpaTarget {
    fn add_hw_watchpoint(
        &mut self,
        addr: u64,
        len: u64,
        kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        self.hub
            .lock()
            .watchpoints
            .push(watchpoint(addr, len, kind));
        self.hub.breakpoints_changed();
        Ok(true)
    }

    fn remove_hw_watchpoint(
        &mut self,
        addr: u64,
        len: u64,
        kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        let gone = watchpoint(addr, len, kind);
        let mut state = self.hub.lock();
        let before = state.watchpoints.len();
        state.watchpoints.retain(|w| *w != gone);
        let removed = state.watchpoints.len() != before;
        self.hub.breakpoints_changed();
        Ok(removed)
    }
}

impl DpaTarget {
    fn set_breakpoint(&mut self, addr: u64, on: bool) -> bool {
        let mut state = self.hub.lock();
        let present = state.breakpoints.contains(&addr);
        match (on, present) {
            (true, false) => state.breakpoints.push(addr),
            (false, true) => state.breakpoints.retain(|&a| a != addr),
            _ => return false,
        }
        self.hub.breakpoints_changed();
        true
    }
}

impl SwBreakpoint for DpaTarget {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.set_breakpoint(addr, true))
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.set_breakpoint(addr, false))
    }
}

impl HwBreakpoint for DpaTarget {
    fn add_hw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.set_breakpoint(addr, true))
    }

    fn remove_hw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.set_breakpoint(addr, false))
    }
}

impl SectionOffsets for DpaTarget {
    fn get_section_offsets(&mut self) -> Result<Offsets<u64>, Self::Error> {
        let state = self.hub.lock();
        let bias = state.program.as_ref().map_or(0, |(_, bias, _)| *bias);
        Ok(Offsets::Sections {
            text: bias,
            data: bias,
            bss: Some(bias),
        })
    }
}

/// The image file, so gdb loads its symbols and DWARF without being told (`file`).
impl ExecFile for DpaTarget {
    fn get_exec_file(
        &self,
        _pid: Option<Pid>,
        offset: u64,
        length: usize,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        let state = self.hub.lock();
        let path = state
            .program
            .as_ref()
            .map(|(_, _, path)| path.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = path.as_bytes();
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let n = length.min(buf.len()).min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }
}

impl ThreadExtraInfo for DpaTarget {
    fn thread_extra_info(&self, tid: Tid, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let parked = self
            .hub
            .lock()
            .parked
            .get(&tid_of(tid))
            .map(|p| match &p.why {
                StopWhy::Fatal { what, .. } => format!("kernel {}: {what}", p.kernel),
                _ => format!("kernel {}", p.kernel),
            });
        // The hub's lock is not held here: `dpa_threads` takes it.
        let text = match parked {
            Some(text) => text,
            None if tid_of(tid) == IDLE_TID => {
                "the DPA, no kernel running (continue runs the program)".to_string()
            }
            None => dpa_threads(self.hub)
                .into_iter()
                .find(|t| t.index + 1 == tid_of(tid))
                .map(|t| {
                    format!(
                        "kernel {}: {}, between activations (no registers)",
                        t.kernel,
                        t.status.name()
                    )
                })
                .unwrap_or_default(),
        };
        let n = text.len().min(buf.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        Ok(n)
    }
}

/// The threads of the DPA context the debugger follows, as the live view sees them.
fn dpa_threads(hub: &Hub) -> Vec<crate::view::ThreadView> {
    let Some(program) = hub.lock().program.as_ref().map(|p| p.0) else {
        return Vec::new();
    };
    crate::live_contexts()
        .iter()
        .find(|d| d.isa.as_ref().is_some_and(|p| p.id == program))
        .map(|d| d.thread_views())
        .unwrap_or_default()
}

/// The signal GDB shows for a stop.
fn stop_reason(tid: usize, why: &StopWhy) -> MultiThreadStopReason<u64> {
    let Some(tid) = Tid::new(tid) else {
        return MultiThreadStopReason::Signal(Signal::SIGTRAP);
    };
    match why {
        StopWhy::Breakpoint => MultiThreadStopReason::SwBreak(tid),
        StopWhy::Stepped => MultiThreadStopReason::SignalWithThread {
            tid,
            signal: Signal::SIGTRAP,
        },
        StopWhy::Watch { addr, write } => MultiThreadStopReason::Watch {
            tid,
            kind: if *write {
                WatchKind::Write
            } else {
                WatchKind::Read
            },
            addr: *addr,
        },
        StopWhy::Halted => MultiThreadStopReason::SignalWithThread {
            tid,
            signal: Signal::SIGINT,
        },
        StopWhy::Fatal { signal, .. } => MultiThreadStopReason::SignalWithThread {
            tid,
            signal: *signal,
        },
    }
}

/// How long the debugger's thread sleeps between looks at the connection while the program runs.
const POLL: Duration = Duration::from_millis(10);

enum EventLoop {}

impl BlockingEventLoop for EventLoop {
    type Target = DpaTarget;
    type Connection = TcpStream;
    type StopReason = MultiThreadStopReason<u64>;

    fn wait_for_stop_reason(
        target: &mut DpaTarget,
        conn: &mut TcpStream,
    ) -> Result<
        run_blocking::Event<Self::StopReason>,
        WaitForStopReasonError<String, <TcpStream as Connection>::Error>,
    > {
        loop {
            {
                let mut state = target.hub.lock();
                while let Some(tid) = state.stops.pop_front() {
                    if let Some(parked) = state.parked.get(&tid) {
                        let reason = stop_reason(tid, &parked.why);
                        return Ok(run_blocking::Event::TargetStopped(reason));
                    }
                }
                drop(target.hub.wait(state, POLL));
            }
            match conn.peek() {
                Ok(Some(_)) => {
                    let byte = conn.read().map_err(WaitForStopReasonError::Connection)?;
                    return Ok(run_blocking::Event::IncomingData(byte));
                }
                Ok(None) => {}
                Err(e) => return Err(WaitForStopReasonError::Connection(e)),
            }
        }
    }

    fn on_interrupt(target: &mut DpaTarget) -> Result<Option<Self::StopReason>, String> {
        // Ctrl-C: every running activation stops at its next instruction; the stop is reported
        // when the first parks.
        target.hub.request_halt();
        Ok(None)
    }
}
