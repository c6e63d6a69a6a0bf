//! Memory faults inside kernel activations become fatal errors of their DPA context.
//!
//! On the device a kernel that touches an address it may not reach faults its DPA context; the
//! host process is not affected. The soft device runs kernels in the host process, so it catches
//! SIGSEGV and SIGBUS itself: when the fault happened on the stack of the activation running on
//! the faulting thread, the signal handler redirects that activation to a function that records
//! a fatal error naming the kernel, the address and the instruction, and ends the activation.
//! The worker goes on; other DPA contexts never notice. Any other fault — outside an activation,
//! or on another stack — goes to the handler that was installed before ours (the Rust runtime's
//! stack-overflow report, or the default action), exactly as if the soft device were not there.
//!
//! A fault abandons the kernel's frames the way `thread_reschedule` does; anything a device
//! function had locked in those frames stays locked, which is why device functions check
//! addresses before they touch them and hold no lock while a kernel's pointer is dereferenced.

use super::DpaShared;
use crate::error::{ErrorCode, err};
use crate::sync::Ordering;
use crate::sync::plain::AtomicUsize;
use corosensei::trap::CoroutineTrapHandler;
use dpakit_abi::soft::Ending;
use std::cell::Cell;
use std::sync::OnceLock;

/// What the signal handler needs to redirect the running activation.
#[derive(Clone, Copy)]
pub(crate) struct Armed {
    pub handler: CoroutineTrapHandler<Ending>,
    pub dpa: *const DpaShared,
    pub kernel: &'static str,
}

thread_local! {
    /// The activation running on this thread, if any. Read by the signal handler: a const-
    /// initialised `Cell` of a `Copy` value needs no lazy initialisation, so reading it there is
    /// async-signal-safe.
    static ARMED: Cell<Option<Armed>> = const { Cell::new(None) };
    /// Whether this thread has an alternate signal stack (a stack overflow inside a kernel must
    /// not run the handler on the overflowed stack): checked on every activation, so a plain
    /// flag.
    static ALT_STACK: Cell<bool> = const { Cell::new(false) };
    /// The alternate signal stack the soft device gave this thread, if it had none: disabled and
    /// freed when the thread ends (a program may start any number of threads that call an RPC).
    static OWN_ALT_STACK: std::cell::RefCell<Option<AltStack>> =
        const { std::cell::RefCell::new(None) };
}

/// Alternate signal stacks the soft device allocated that are still alive.
static LIVE_ALT_STACKS: AtomicUsize = AtomicUsize::new(0);

/// Alternate signal stacks the soft device gave threads that had none, and that are not freed
/// yet (each is freed when its thread ends).
pub fn live_alt_stacks() -> usize {
    LIVE_ALT_STACKS.load(Ordering::Relaxed)
}

/// An alternate signal stack installed on the thread that owns the value.
struct AltStack(Box<[u8]>);

impl Drop for AltStack {
    fn drop(&mut self) {
        LIVE_ALT_STACKS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: stack_t is plain data, valid zeroed.
        let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: querying with a null new stack only writes `current`.
        unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
        if current.ss_sp != self.0.as_mut_ptr().cast() {
            // Code of the program installed another one since: ours is unused.
            return;
        }
        let off = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: disables the calling thread's alternate stack (it is ending, outside any
        // handler); the memory is freed only once that succeeded.
        if unsafe { libc::sigaltstack(&off, std::ptr::null_mut()) } != 0 {
            std::mem::forget(std::mem::take(&mut self.0));
        }
    }
}

/// Size of the alternate signal stacks the soft device sets up.
const ALT_STACK_SIZE: usize = 64 * 1024;

/// Signals a kernel fault raises.
const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// The handlers that were installed before ours, per entry of [`SIGNALS`]. Set once, before
/// our handler is; reading a set `OnceLock` is an atomic load, fine in a signal handler.
static PREVIOUS: OnceLock<[Option<libc::sigaction>; 2]> = OnceLock::new();

/// Whether this build can redirect a faulting activation (the register layouts it knows).
pub(crate) const SUPPORTED: bool = cfg!(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
));

/// Arms the trap for one resumption of an activation; restores the previous state on drop.
pub(crate) struct ArmGuard(Option<Armed>);

impl ArmGuard {
    pub(crate) fn arm(armed: Armed) -> Self {
        if SUPPORTED {
            install();
            ensure_alt_stack();
        }
        ArmGuard(ARMED.with(|a| a.replace(Some(armed))))
    }
}

impl Drop for ArmGuard {
    fn drop(&mut self) {
        ARMED.with(|a| a.set(self.0));
    }
}

/// Installs the process-wide SIGSEGV/SIGBUS handler once, keeping the previous ones to chain.
fn install() {
    PREVIOUS.get_or_init(|| {
        let mut previous = [None, None];
        for (slot, &sig) in previous.iter_mut().zip(&SIGNALS) {
            // SAFETY: sigaction is plain data, valid zeroed.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: querying with a null new action only writes `old`.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0 {
                *slot = Some(old);
            }
        }
        previous
    });
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        for sig in SIGNALS {
            // SAFETY: sigaction is plain data; zeroed is a valid empty set of flags and mask.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_fault as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // SAFETY: a valid action; PREVIOUS holds what it replaces.
            unsafe {
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    });
}

/// Gives the calling thread an alternate signal stack unless it has one (threads the Rust
/// runtime starts usually do).
fn ensure_alt_stack() {
    if ALT_STACK.with(Cell::get) {
        return;
    }
    // SAFETY: stack_t is plain data, valid zeroed.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: querying with a null new stack only writes `current`.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE != 0 {
        // Kept for the thread's life (a thread that ran one activation usually runs more), freed
        // when it ends.
        let mut memory = vec![0u8; ALT_STACK_SIZE].into_boxed_slice();
        let new = libc::stack_t {
            ss_sp: memory.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: memory.len(),
        };
        // SAFETY: `memory` is valid memory of the stated size, owned by this thread's
        // OWN_ALT_STACK until the thread ends, whose drop disables it before freeing it.
        if unsafe { libc::sigaltstack(&new, std::ptr::null_mut()) } == 0 {
            LIVE_ALT_STACKS.fetch_add(1, Ordering::Relaxed);
            let stack = AltStack(memory);
            // In a thread already tearing down its thread-locals (a destructor calling an RPC)
            // the closure is dropped instead, and the stack with it: disabled and freed again.
            if OWN_ALT_STACK
                .try_with(|own| *own.borrow_mut() = Some(stack))
                .is_err()
            {
                return;
            }
        }
    }
    ALT_STACK.with(|a| a.set(true));
}

/// The stack pointer and program counter of an interrupted context.
///
/// # Safety
/// `uc` is the context the kernel passed to a SA_SIGINFO handler.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn sp_pc(uc: *mut libc::ucontext_t) -> (usize, usize) {
    // SAFETY: upheld by the caller.
    let gregs = unsafe { &(*uc).uc_mcontext.gregs };
    (
        gregs[libc::REG_RSP as usize] as usize,
        gregs[libc::REG_RIP as usize] as usize,
    )
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
unsafe fn sp_pc(uc: *mut libc::ucontext_t) -> (usize, usize) {
    // SAFETY: upheld by the caller.
    let mc = unsafe { &(*uc).uc_mcontext };
    (mc.sp as usize, mc.pc as usize)
}

/// Points the interrupted context at the function `setup_trap_handler` prepared.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn redirect(uc: *mut libc::ucontext_t, regs: corosensei::trap::TrapHandlerRegs) {
    // SAFETY: as for sp_pc.
    let gregs = unsafe { &mut (*uc).uc_mcontext.gregs };
    gregs[libc::REG_RIP as usize] = regs.rip as i64;
    gregs[libc::REG_RSP as usize] = regs.rsp as i64;
    gregs[libc::REG_RBP as usize] = regs.rbp as i64;
    gregs[libc::REG_RDI as usize] = regs.rdi as i64;
    gregs[libc::REG_RSI as usize] = regs.rsi as i64;
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
unsafe fn redirect(uc: *mut libc::ucontext_t, regs: corosensei::trap::TrapHandlerRegs) {
    // SAFETY: as for sp_pc.
    let mc = unsafe { &mut (*uc).uc_mcontext };
    mc.pc = regs.pc;
    mc.sp = regs.sp;
    mc.regs[0] = regs.x0;
    mc.regs[1] = regs.x1;
    mc.regs[29] = regs.x29;
    mc.regs[30] = regs.lr;
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
unsafe fn sp_pc(_uc: *mut libc::ucontext_t) -> (usize, usize) {
    (0, 0)
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
unsafe fn redirect(_uc: *mut libc::ucontext_t, _regs: corosensei::trap::TrapHandlerRegs) {}

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let uc = ctx.cast::<libc::ucontext_t>();
    // SAFETY: the kernel passes a valid context to a SA_SIGINFO handler.
    let (sp, pc) = unsafe { sp_pc(uc) };
    if let Some(armed) = ARMED.with(Cell::get) {
        if SUPPORTED && armed.handler.stack_ptr_in_bounds(sp) {
            // SAFETY: valid siginfo for SIGSEGV/SIGBUS, which carry the faulting address.
            let addr = unsafe { (*info).si_addr() } as usize;
            let (dpa, kernel) = (armed.dpa, armed.kernel);
            // SAFETY: the faulting stack pointer is inside the running activation's stack,
            // whose coroutine is alive (the guard disarms before it ends); the context is
            // updated with every register the returned set names.
            unsafe {
                let regs = armed
                    .handler
                    .setup_trap_handler(move || record(dpa, kernel, sig, addr, pc));
                redirect(uc, regs);
            }
            return;
        }
    }
    chain(sig, info, ctx);
}

/// Runs on the activation's (reset) stack once the signal handler returned: ordinary code
/// again, so it may lock and allocate.
fn record(dpa: *const DpaShared, kernel: &str, sig: libc::c_int, addr: usize, pc: usize) -> Ending {
    let name = if sig == libc::SIGBUS {
        "SIGBUS"
    } else {
        "SIGSEGV"
    };
    // SAFETY: the activation that faulted holds its DPA alive until it ends.
    let dpa = unsafe { &*dpa };
    dpa.set_fatal(err(
        ErrorCode::Unexpected,
        format!(
            "kernel `{kernel}`: memory fault ({name}) at address {addr:#x}, instruction {pc:#x}: \
             the kernel touched memory it may not reach (a device pointer from a bad argument, \
             a stale handle's memory, or a stack overflow)"
        ),
    ));
    Ending::Fault
}

/// Hands a fault that is not an activation's to the handler installed before ours.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let index = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    let previous = PREVIOUS.get().and_then(|p| p[index]);
    match previous {
        Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
            if old.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous owner installed a three-argument handler.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(old.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: the previous owner installed a one-argument handler.
                let f: extern "C" fn(libc::c_int) =
                    unsafe { std::mem::transmute(old.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // Default action: uninstall and return; the instruction faults again and the
            // process ends the way it would have without the soft device.
            // SAFETY: a zeroed action with SIG_DFL is valid.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    }
}
