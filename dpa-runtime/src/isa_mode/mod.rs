//! ISA mode: kernels run from the DPA image, instruction by instruction.
//!
//! Native mode runs the kernels compiled for the host. ISA mode runs the riscv64 image `cargo
//! xtask build-dpa` links — the code that would run on the DPA — in the soft device's RV64IMAC
//! interpreter ([`isa`](super::isa)). Each DOCA device function is a runtime stub that traps
//! into the soft device, which serves it with the code native mode uses ([`calls`]); every load
//! and store is checked against the memory the kernel may reach ([`bus`]); an activation runs
//! at most a budget of instructions. A bad address, a misaligned access, an illegal instruction
//! or a runaway loop is a fatal error on the DPA context naming the kernel, the instruction and
//! the address, never a fault of the host process.
//!
//! The interpreter counts the instructions each thread's activations retire and the device
//! calls they make: the cost model [`Profile`] reports.

mod bus;
mod calls;
pub(crate) mod counters;
mod debug;
pub use debug::set_gdb_address;
mod gdb;
mod image;
mod printf;

use super::current::{Current, with_current};
use crate::error::{ErrorCode, Result, bail};
use crate::sync::Ordering;
use crate::sync::plain::AtomicU64;
use bus::DeviceBus;
use calls::DeviceFn;
use counters::Counters;
pub use counters::Profile;
use debug::{Hub, StopWhy};
use dpakit_abi::soft::Ending;
use dpakit_rv::{Access, AmoOp, Bus, DecodeCache, Direct, FaultReason, Hart, MemFault, Stop};
use std::cell::Cell;
use std::path::PathBuf;

pub(crate) use dpakit_rv::Image;

pub use dpakit_abi::soft::ExecMode;

/// The function of `dpakit_dev::panic` whose illegal instruction ends a kernel's panic, with
/// the message and the location in a0–a5.
const PANIC_TRAP: &str = "dpakit_dev_panic_trap";

/// Instructions an activation may retire by default without making progress (taking a message
/// or a completion, posting a send or a copy) before it is stopped as a runaway loop.
pub const DEFAULT_BUDGET: u64 = 100_000_000;

/// Instructions the interpreter runs between two looks at whether the thread was stopped.
const STOP_CHECK_EVERY: u64 = 1 << 20;

/// Bytes of stack an ISA-mode activation has.
pub const STACK_SIZE: usize = 64 * 1024;

/// Where `ra` points when a kernel is entered: returning there ends the activation. Never an
/// address of the host's user space.
const EXIT_PC: u64 = 0xffff_ffff_ffff_f000;

/// ISA-mode settings of a DPA context.
#[derive(Clone, Debug)]
pub struct IsaConfig {
    /// The image to run, instead of `DPAKIT_SOFT_DPA_IMAGE` or the app's own.
    pub image: Option<PathBuf>,
    /// Instructions one activation may retire.
    pub budget: u64,
}

impl Default for IsaConfig {
    fn default() -> Self {
        Self {
            image: None,
            budget: DEFAULT_BUDGET,
        }
    }
}

/// A DPA context's loaded image: per context, as its globals are.
#[derive(Debug)]
pub(crate) struct Program {
    /// Unique per loaded program: names the code a thread's decode cache holds.
    id: u64,
    pub image: Image,
    pub path: PathBuf,
    budget: u64,
    /// RPCs run in ISA mode.
    pub rpcs: Counters,
    /// Threads of kernel launches run in ISA mode.
    pub launches: Counters,
    /// Where the image's `dpakit_dev_panic_trap` lies, if it has one: an illegal instruction
    /// there is a kernel's panic, reported with its message and location.
    panic_trap: Option<(u64, u64)>,
    /// The image's runtime stubs by address.
    stubs: image::Stubs,
    /// Followed by the debugger (`DPAKIT_SOFT_GDB`): its activations look at every instruction.
    debugged: bool,
}

impl Program {
    /// Loads the image `config` or `app` names.
    pub(crate) fn load(config: &IsaConfig, app: &super::App) -> Result<Program> {
        if config.budget == 0 {
            crate::error::bail!(InvalidValue, "an ISA instruction budget of 0 runs nothing");
        }
        let (image, path) = image::resolve(config.image.as_deref(), app)?;
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let panic_trap = image
            .symbols
            .iter()
            .find(|s| s.name == PANIC_TRAP)
            .map(|s| (s.start, s.start + s.size));
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let debugged = gdb::follow_if_asked(id, image.bias(), &path)?;
        Ok(Program {
            panic_trap,
            stubs: image::Stubs::of(&image),
            id,
            debugged,
            image,
            path,
            budget: config.budget,
            rpcs: Counters::default(),
            launches: Counters::default(),
        })
    }

    /// The image address of kernel `name`: NOT_FOUND when the image lacks it.
    pub(crate) fn entry(&self, name: &str) -> Result<u64> {
        self.image.function(name).ok_or_else(|| {
            crate::error::err(
                ErrorCode::NotFound,
                format!(
                    "kernel `{name}` is not in the DPA image {} (rebuild it with `cargo xtask \
                     build-dpa`, or name the image of this app)",
                    self.path.display()
                ),
            )
        })
    }
}

thread_local! {
    /// The stack ISA activations on this OS thread use (its lowest address): an activation
    /// starts from its kernel's entry with an empty stack, and one OS thread runs one activation
    /// at a time. Mapped by the first activation (warm-up) with an inaccessible guard of the
    /// same size below it, so an access just below the stack is always an overflow and never
    /// other memory; unmapped when the thread ends ([`Release`]).
    static STACK: Cell<*mut u8> = const { Cell::new(std::ptr::null_mut()) };
}

thread_local! {
    /// The decode cache of this OS thread's ISA activations and the program whose code it
    /// holds: kept across activations of that program, cleared when another one runs.
    /// Allocated by the first activation (warm-up), freed when the thread ends ([`Release`]);
    /// a raw pointer, not a borrow: an activation that ends inside a device call never returns
    /// to release one.
    static DECODED: Cell<(u64, *mut DecodeCache)> = const { Cell::new((0, std::ptr::null_mut())) };
}

thread_local! {
    /// Frees this OS thread's ISA stack and decode cache when it ends (a DPA context's workers
    /// end with the context). Touched only when they are allocated, so the datapath reads the
    /// plain cells above.
    static RELEASE: Release = const { Release };
}

/// See [`RELEASE`].
struct Release;

impl Release {
    /// Makes sure this thread's ISA memory is freed when the thread ends.
    fn register() {
        RELEASE.with(|_| {});
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        let stack = STACK.with(|s| s.replace(std::ptr::null_mut()));
        if !stack.is_null() {
            // SAFETY: the mapping `stack()` made, guard and stack; the thread is ending, so no
            // activation of it runs on the stack any more.
            unsafe { libc::munmap(stack.wrapping_sub(STACK_SIZE).cast(), 2 * STACK_SIZE) };
        }
        let (_, cache) = DECODED.with(|d| d.replace((0, std::ptr::null_mut())));
        if !cache.is_null() {
            // SAFETY: the Box `decode_cache()` leaked; no activation of this thread uses it.
            drop(unsafe { Box::from_raw(cache) });
        }
    }
}

/// This OS thread's decode cache, holding decodings of `program`'s code only.
fn decode_cache(program: &Program) -> *mut DecodeCache {
    let (id, mut cache) = DECODED.with(Cell::get);
    if cache.is_null() {
        cache = Box::into_raw(Box::new(DecodeCache::new()));
        Release::register();
    } else if id != program.id {
        // SAFETY: this thread's cache, not in use: one activation at a time per OS thread,
        // and none is running while the next one starts.
        unsafe { (*cache).clear() };
    }
    DECODED.with(|d| d.set((program.id, cache)));
    cache
}

/// The `[start, end)` of this OS thread's ISA stack; `NO_MEMORY` if it cannot be mapped.
fn stack() -> Result<(u64, u64)> {
    let mut p = STACK.with(Cell::get);
    if p.is_null() {
        // SAFETY: a new private anonymous mapping, touching no existing one.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * STACK_SIZE,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            bail!(
                NoMemory,
                "cannot map an ISA stack: {}",
                std::io::Error::last_os_error()
            );
        }
        let top = base.cast::<u8>().wrapping_add(STACK_SIZE);
        // SAFETY: the upper half of the mapping just made; the lower half stays the guard.
        if unsafe { libc::mprotect(top.cast(), STACK_SIZE, libc::PROT_READ | libc::PROT_WRITE) }
            != 0
        {
            let e = std::io::Error::last_os_error();
            // SAFETY: the mapping just made, used by nothing.
            unsafe { libc::munmap(base, 2 * STACK_SIZE) };
            bail!(NoMemory, "cannot map an ISA stack: {e}");
        }
        p = top;
        STACK.with(|s| s.set(p));
        Release::register();
    }
    Ok((p as u64, p as u64 + STACK_SIZE as u64))
}

/// Runs kernel code at `entry` with `args` in the current activation; returns a0 if it returns.
/// Every other ending (a device call ending the activation, a fault) leaves through the
/// activation and never returns here.
pub(crate) fn run(program: &Program, counters: &Counters, entry: u64, args: &[u64]) -> u64 {
    with_current("the ISA interpreter", |cur| {
        let image = &program.image;
        let (stack_start, stack_end) = match stack() {
            Ok(range) => range,
            Err(e) => {
                let (code, message) = (e.code(), e.message().to_string());
                // The activation ends without unwinding: nothing owned may be left on this frame.
                drop(e);
                cur.fault(code, message)
            }
        };
        let mem = DeviceBus::new(image, program.id, cur.dpa, (stack_start, stack_end));
        let debugger = program
            .debugged
            .then(debug::hub)
            .flatten()
            .filter(|hub| hub.attached())
            .map(|hub| (hub, debug::tid(cur)));
        let mut bus = KernelBus::new(mem, cur, program, counters, debugger);
        let mut hart = Hart::new();
        // Arguments past the eighth go on the stack, the first at the stack pointer (LP64).
        let (in_registers, on_stack) = args.split_at(args.len().min(8));
        let sp = (stack_end - 8 * on_stack.len() as u64) & !15;
        for (i, a) in on_stack.iter().enumerate() {
            if bus.mem.write_out(sp + 8 * i as u64, 8, *a).is_err() {
                cur.fault(
                    ErrorCode::NoMemory,
                    "the kernel's arguments do not fit its stack".into(),
                );
            }
        }
        hart.prepare_call(entry, EXIT_PC, sp, in_registers);
        // SAFETY: this thread's cache (see `decode_cache`), used by this activation alone.
        let cache = unsafe { &mut *decode_cache(program) };
        counters.activations.fetch_add(1, Ordering::Relaxed);
        let mut watch = debugger.map(|(hub, tid)| hub.watch(tid));
        loop {
            // Instructions since the kernel last made progress (the budget): a loop that keeps
            // serving messages is no runaway.
            let idle = hart.instret() - bus.progress;
            let mut slice = (program.budget - idle).min(STOP_CHECK_EVERY);
            if let (Some((hub, tid)), Some(watch)) = (debugger, watch.as_mut()) {
                // Debugged: one instruction at a time, each looked at first.
                slice = slice.min(1);
                if let Some(why) = watch.stop_before(hub, hart.pc) {
                    let resume = hub.park(
                        tid,
                        cur.kernel,
                        &mut hart.x,
                        &mut hart.pc,
                        &mut bus.mem,
                        why,
                    );
                    watch.resumed(hub, resume, hart.pc);
                }
            }
            let (stop, _) = match watch.as_mut() {
                // Debugged: each access looked at against the watchpoints.
                Some(watch) if !watch.watchpoints.is_empty() => {
                    let mut watched = debug::WatchBus {
                        inner: &mut bus,
                        watchpoints: &watch.watchpoints,
                        hit: None,
                    };
                    let ran = hart.run(&mut watched, EXIT_PC, slice);
                    watch.watch_hit = watched.hit;
                    ran
                }
                _ => hart.run_cached(&mut bus, cache, EXIT_PC, slice),
            };
            // Nothing below may end the activation holding an mmap.
            bus.mem.release();
            bus.count(hart.instret());
            let idle = hart.instret() - bus.progress;
            if let Some(watch) = watch.as_mut() {
                watch.ran();
            }
            match stop {
                // The device calls were served in the run ([`KernelBus`]).
                Stop::Ecall => debug_fault(&mut bus, &mut hart, debug::Signal::SIGSYS, "an `ecall` outside the device runtime (kernels call DOCA device functions; they make no system calls)".into()),
                Stop::Returned => return hart.x[10],
                // A slice ran out: a stopped thread's activation ends here, between two
                // instructions (nothing is held), instead of running on to its budget.
                Stop::Budget if idle < program.budget => {
                    let launch_stopped = cur.launch.is_some_and(|l| l.stop.load(Ordering::Acquire));
                    if launch_stopped || cur.thread.is_some_and(|t| t.stop_requested()) {
                        cur.end(Ending::Finish);
                    }
                }
                Stop::Budget => debug_fault(
                    &mut bus,
                    &mut hart,
                    debug::Signal::SIGXCPU,
                    format!(
                        "ran {} instructions in one activation without making progress (taking \
                         a message or a completion, posting a send or a copy): the ISA budget, \
                         DPAKIT_SOFT_ISA_BUDGET (SoftSettings::isa_budget). A loop that never \
                         ends its activation? End it (return, thread_reschedule) between \
                         messages, or raise the budget; stopped before the next instruction",
                        program.budget
                    ),
                ),
                Stop::Ebreak => debug_fault(&mut bus, &mut hart, debug::Signal::SIGTRAP, "a breakpoint (`ebreak`)".into()),
                Stop::Illegal { pc, .. }
                    if program
                        .panic_trap
                        .is_some_and(|(start, end)| (start..end).contains(&pc)) =>
                {
                    panicked(cur, &mut hart, &mut bus)
                }
                Stop::Illegal { raw, .. } => debug_fault(
                    &mut bus,
                    &mut hart,
                    debug::Signal::SIGILL,
                    format!(
                        "an illegal instruction {raw:#010x} (not RV64IMAC, or a trap the \
                         compiler placed: a Rust abort or C __builtin_trap)"
                    ),
                ),
                Stop::Fault { fault: f, .. } => {
                    let message = describe_fault(&f, &bus.mem);
                    debug_fault(&mut bus, &mut hart, debug::Signal::SIGSEGV, message)
                }
            }
        }
    })
}

/// The bus a kernel runs with: its memory ([`DeviceBus`]), and the device calls its runtime
/// stubs make, served inside the run (no return to the loop above per call) with every check
/// of [`calls::serve`].
struct KernelBus<'a, 'c> {
    mem: DeviceBus<'a>,
    cur: &'a Current<'c>,
    program: &'a Program,
    counters: &'a Counters,
    /// The hart's retired count when the counters were last brought up to date, and when the
    /// kernel last made progress.
    counted: u64,
    progress: u64,
    /// The debugger following the program, and this activation's thread id there.
    debugger: Option<(&'static Hub, usize)>,
}

impl<'a, 'c> KernelBus<'a, 'c> {
    #[inline(always)]
    fn new(
        mem: DeviceBus<'a>,
        cur: &'a Current<'c>,
        program: &'a Program,
        counters: &'a Counters,
        debugger: Option<(&'static Hub, usize)>,
    ) -> Self {
        Self {
            mem,
            cur,
            program,
            counters,
            counted: 0,
            progress: 0,
            debugger,
        }
    }

    /// Counts the instructions retired up to `instret` (the activation's total so far).
    #[inline]
    fn count(&mut self, instret: u64) {
        self.counters.retired(instret - self.counted, instret);
        self.counted = instret;
    }
}

impl Bus for KernelBus<'_, '_> {
    #[inline(always)]
    fn fetch16(&mut self, addr: u64) -> std::result::Result<u16, MemFault> {
        self.mem.fetch16(addr)
    }
    #[inline(always)]
    fn load(&mut self, addr: u64, size: u8) -> std::result::Result<u64, MemFault> {
        self.mem.load(addr, size)
    }
    #[inline(always)]
    fn store(&mut self, addr: u64, size: u8, value: u64) -> std::result::Result<(), MemFault> {
        self.mem.store(addr, size, value)
    }
    #[inline(always)]
    fn amo(
        &mut self,
        addr: u64,
        size: u8,
        op: AmoOp,
        operand: u64,
    ) -> std::result::Result<u64, MemFault> {
        self.mem.amo(addr, size, op, operand)
    }
    #[inline(always)]
    fn cas(
        &mut self,
        addr: u64,
        size: u8,
        expected: u64,
        new: u64,
    ) -> std::result::Result<bool, MemFault> {
        self.mem.cas(addr, size, expected, new)
    }
    #[inline(always)]
    fn code_is_fixed(&self, addr: u64, len: u8) -> bool {
        self.mem.code_is_fixed(addr, len)
    }
    #[inline(always)]
    fn direct(&mut self, addr: u64, size: u8, access: Access) -> Option<Direct> {
        self.mem.direct(addr, size, access)
    }
    #[inline(always)]
    fn stamp(&self) -> u64 {
        self.mem.stamp()
    }

    /// A runtime stub's `ecall`: the device call, served here. Any other `ecall` stops the run.
    fn ecall(&mut self, pc: u64, x: &mut [u64; 32], instret: u64) -> bool {
        let Some(f) = self.program.stubs.at(pc).map(|i| DeviceFn::ALL[i]) else {
            return false;
        };
        // The call may end the activation, which leaves without unwinding: the mmaps held go,
        // and the counters are brought up to date, first.
        self.mem.release();
        self.count(instret);
        self.counters.calls[f as usize].fetch_add(1, Ordering::Relaxed);
        // Under the debugger a device function's fatal error (a bad handle, say) stops at the
        // stub's `ecall` first, as a bad argument does below. Only then are the registers kept.
        let stop;
        let on_fatal: Option<&calls::OnFatal> = match self.debugger {
            Some(debugger) => {
                let (kernel, regs) = (self.cur.kernel, *x);
                stop = move |mem: &mut DeviceBus<'_>, what: &str| {
                    let mut regs = regs;
                    park_bad_call(debugger, kernel, &mut regs, pc, mem, what)
                };
                Some(&stop)
            }
            None => None,
        };
        match calls::serve(f, x, instret, &mut self.mem, on_fatal) {
            Ok(true) => self.progress = instret,
            Ok(false) => {}
            Err(e) => {
                let what = format!(
                    "{}: an argument's {}",
                    f.name(),
                    describe_fault(&e, &self.mem)
                );
                if let Some(debugger) = self.debugger {
                    park_bad_call(debugger, self.cur.kernel, x, pc, &mut self.mem, &what);
                }
                fault(self.cur, &self.program.image, pc, what);
            }
        }
        true
    }
}

/// Shows the debugger a bad device call (`SIGSYS`) at the stub's `ecall` at `pc`, before the
/// activation fails with `what`.
fn park_bad_call(
    (hub, tid): (&'static Hub, usize),
    kernel: &'static str,
    x: &mut [u64; 32],
    pc: u64,
    mem: &mut DeviceBus<'_>,
    what: &str,
) {
    let why = StopWhy::Fatal {
        signal: debug::Signal::SIGSYS,
        what: what.to_owned(),
    };
    let mut at = pc;
    hub.park(tid, kernel, x, &mut at, mem, why);
}

/// A kernel's panic (`dpakit_dev::panic::report`): its message and location, read from the
/// trap's registers through the bus's checks, in the words native mode uses.
fn panicked(cur: &Current<'_>, hart: &mut Hart, kbus: &mut KernelBus<'_, '_>) -> ! {
    let bus = &mut kbus.mem;
    use dpakit_rv::reg::A0;
    fn text(bus: &mut DeviceBus<'_>, addr: u64, len: u64) -> String {
        let mut bytes = vec![0u8; len.min(1024) as usize];
        match bus.read_bytes(addr, &mut bytes) {
            Ok(()) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => format!("(unreadable: the {})", describe_fault(&e, bus)),
        }
    }
    let a = |n: usize| hart.x[A0 + n];
    let message = text(bus, a(0), a(1));
    let file = text(bus, a(2), a(3));
    let at = (!file.is_empty()).then_some((&file[..], a(4) as u32, a(5) as u32));
    let report = super::current::panicked(&message, at);
    if let Some((hub, tid)) = kbus.debugger {
        let why = StopWhy::Fatal {
            signal: debug::Signal::SIGABRT,
            what: report.clone(),
        };
        hub.park(
            tid,
            cur.kernel,
            &mut hart.x,
            &mut hart.pc,
            &mut kbus.mem,
            why,
        );
    }
    // The activation ends without unwinding: nothing owned may be left on this frame.
    drop((message, file));
    cur.fault(ErrorCode::Unexpected, report)
}

/// A fatal error at the hart's pc: shown to the debugger first (as `signal`, the activation
/// parked until gdb lets it go), then recorded as [`fault`] does.
fn debug_fault(
    bus: &mut KernelBus<'_, '_>,
    hart: &mut Hart,
    signal: debug::Signal,
    what: String,
) -> ! {
    if let Some((hub, tid)) = bus.debugger {
        let why = StopWhy::Fatal {
            signal,
            what: what.clone(),
        };
        hub.park(
            tid,
            bus.cur.kernel,
            &mut hart.x,
            &mut hart.pc,
            &mut bus.mem,
            why,
        );
    }
    fault(bus.cur, &bus.program.image, hart.pc, what)
}

/// Records a fatal error naming the kernel and the instruction, and ends the activation.
fn fault(cur: &Current<'_>, image: &Image, pc: u64, what: String) -> ! {
    let message = format!("{what}; at pc {} (ISA mode)", image.describe(pc));
    // The activation ends without unwinding: nothing owned may be left on this frame.
    drop(what);
    // The code native mode gives a kernel's memory fault.
    cur.fault(ErrorCode::Unexpected, message)
}

fn describe_fault(f: &MemFault, bus: &DeviceBus<'_>) -> String {
    let kind = match f.access {
        Access::Fetch => "instruction fetch",
        Access::Load => "load",
        Access::Store => "store",
        Access::Atomic => "atomic access",
    };
    let why = match f.reason {
        FaultReason::Misaligned => format!(
            "is misaligned (an access of {} bytes needs an address aligned to {})",
            f.size, f.size
        ),
        FaultReason::ReadOnly => "is read-only for the kernel".into(),
        FaultReason::NotExecutable => "is not code of the image".into(),
        FaultReason::Unmapped
            if f.addr < bus.stack_start() && bus.stack_start() - f.addr <= STACK_SIZE as u64 =>
        {
            format!("is below the stack: a stack overflow (ISA stacks are {STACK_SIZE} bytes)")
        }
        FaultReason::Unmapped => "is outside the memory the kernel may reach (its image, its \
                                  stack, DPA memory of its context, immediates it received, \
                                  mmaps it took external pointers to)"
            .into(),
    };
    format!("{kind} of {} bytes at address {:#x} {why}", f.size, f.addr)
}
