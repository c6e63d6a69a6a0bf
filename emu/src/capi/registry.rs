//! The registry of live C objects: what lets every call tell a live handle of the right kind
//! from NULL, a destroyed one, one of another kind or a stray pointer — without a lock and
//! without ever dereferencing the pointer it is given.
//!
//! Every object handed to C is a 16-byte slot in one region of address space reserved up front
//! (and committed in chunks as it fills). The pointer C holds is the slot's address, so checking
//! a handle is a range check and one atomic load of the slot's tag (kind and generation); the
//! slot points at the Rust object. Slot memory is never returned to the system, so reading the
//! tag of a destroyed object is always defined, and freed slots are reused first-in first-out
//! behind a quarantine, so a stale handle keeps failing for a long time before its slot is
//! reused.

use crate::error::{ErrorCode, Result, err};
use crate::sync::Ordering;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::rc::Rc;
// Slots live in zero-initialised mmap memory, and the arena bounds are statics: loom cannot
// have them, so they are plain atomics.
use crate::sync::plain::{AtomicPtr, AtomicU64, AtomicUsize};
use std::sync::{Mutex, OnceLock};

/// The kinds of objects C can hold.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Devinfo = 1,
    DevinfoRep,
    Dev,
    DevRep,
    Pe,
    Mmap,
    BufInventory,
    Buf,
    Msgq,
    Consumer,
    Producer,
    ConsumerCompletion,
    Dpa,
    DpaThread,
    DpaCompletion,
    Notification,
    EuAffinity,
    SendTask,
    RecvTask,
    ComchServer,
    ComchClient,
    ComchConnection,
    ComchSendTask,
    SyncEvent,
    CommChannelEp,
    CommChannelAddr,
    BufPool,
    Clock,
    SyncEventTask,
    Dma,
    DmaMemcpyTask,
}

impl Kind {
    const ALL: [Kind; 31] = [
        Kind::Devinfo,
        Kind::DevinfoRep,
        Kind::Dev,
        Kind::DevRep,
        Kind::Pe,
        Kind::Mmap,
        Kind::BufInventory,
        Kind::Buf,
        Kind::Msgq,
        Kind::Consumer,
        Kind::Producer,
        Kind::ConsumerCompletion,
        Kind::Dpa,
        Kind::DpaThread,
        Kind::DpaCompletion,
        Kind::Notification,
        Kind::EuAffinity,
        Kind::SendTask,
        Kind::RecvTask,
        Kind::ComchServer,
        Kind::ComchClient,
        Kind::ComchConnection,
        Kind::ComchSendTask,
        Kind::SyncEvent,
        Kind::CommChannelEp,
        Kind::CommChannelAddr,
        Kind::BufPool,
        Kind::Clock,
        Kind::SyncEventTask,
        Kind::Dma,
        Kind::DmaMemcpyTask,
    ];

    fn from_tag(tag: u64) -> Option<Kind> {
        let k = (tag & 0xff) as usize;
        // Kinds are numbered 1..=ALL.len() in order.
        k.checked_sub(1).and_then(|i| Kind::ALL.get(i).copied())
    }

    /// The DOCA type name, for messages.
    pub(crate) fn c_name(self) -> &'static str {
        match self {
            Kind::Devinfo => "struct doca_devinfo",
            Kind::DevinfoRep => "struct doca_devinfo_rep",
            Kind::Dev => "struct doca_dev",
            Kind::DevRep => "struct doca_dev_rep",
            Kind::Pe => "struct doca_pe",
            Kind::Mmap => "struct doca_mmap",
            Kind::BufInventory => "struct doca_buf_inventory",
            Kind::Buf => "struct doca_buf",
            Kind::Msgq => "struct doca_comch_msgq",
            Kind::Consumer => "struct doca_comch_consumer",
            Kind::Producer => "struct doca_comch_producer",
            Kind::ConsumerCompletion => "struct doca_comch_consumer_completion",
            Kind::Dpa => "struct doca_dpa",
            Kind::DpaThread => "struct doca_dpa_thread",
            Kind::DpaCompletion => "struct doca_dpa_completion",
            Kind::Notification => "struct doca_dpa_notification_completion",
            Kind::EuAffinity => "struct doca_dpa_eu_affinity",
            Kind::SendTask => "struct doca_comch_producer_task_send",
            Kind::RecvTask => "struct doca_comch_consumer_task_post_recv",
            Kind::ComchServer => "struct doca_comch_server",
            Kind::ComchClient => "struct doca_comch_client",
            Kind::ComchConnection => "struct doca_comch_connection",
            Kind::ComchSendTask => "struct doca_comch_task_send",
            Kind::SyncEvent => "struct doca_sync_event",
            Kind::CommChannelEp => "struct doca_comm_channel_ep_t",
            Kind::CommChannelAddr => "struct doca_comm_channel_addr_t",
            Kind::BufPool => "struct doca_buf_pool",
            Kind::Clock => "struct doca_clock",
            Kind::SyncEventTask => {
                "struct doca_sync_event_task_{get,notify_set,notify_add,wait_eq,wait_neq}"
            }
            Kind::Dma => "struct doca_dma",
            Kind::DmaMemcpyTask => "struct doca_dma_task_memcpy",
        }
    }
}

/// A Rust object C holds through the registry.
pub(crate) trait Object: 'static {
    /// Its kind (one Rust type per kind).
    const KIND: Kind;
    /// Whether the registry holds it through an `Rc` shared with the model (a Comch
    /// connection, which its server also holds), not a `Box` of its own:
    /// [`register_shared`]/[`retire_shared`] instead of [`register`]/[`retire`].
    const SHARED: bool = false;
}

/// One registry entry. The address is the C handle.
#[repr(C, align(16))]
struct Slot {
    /// Kind in the low 8 bits (0: free), generation above.
    tag: AtomicU64,
    obj: AtomicPtr<c_void>,
}

/// The callback frames on this thread: const-initialised, so entering one is an increment of a
/// thread-local word.
struct Frames {
    depth: Cell<u32>,
    /// Objects wait in [`RETIRED`].
    retired: Cell<bool>,
}

thread_local! {
    static FRAMES: Frames = const {
        Frames {
            depth: Cell::new(0),
            retired: Cell::new(false),
        }
    };
    /// Objects destroyed while a callback frame was on this thread's stack, freed when the
    /// outermost one returns.
    static RETIRED: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// A soft-device call that runs program callbacks (`doca_pe_progress`, `doca_ctx_start`,
/// `doca_ctx_stop`). A callback may call any DOCA function, destroy included, on any object,
/// the one whose callback runs among them; the frames below it hold references to those
/// objects. So while a frame is on the stack, [`retire`] only unregisters (the handle is
/// invalid at once) and the memory is freed when the outermost frame returns: no soft-device
/// frame ever touches freed memory, whatever a callback destroyed.
#[must_use = "the frame ends when the guard drops"]
pub(crate) struct CallbackFrame(());

impl CallbackFrame {
    #[inline]
    pub(crate) fn enter() -> Self {
        FRAMES.with(|f| f.depth.set(f.depth.get() + 1));
        CallbackFrame(())
    }
}

impl Drop for CallbackFrame {
    #[inline]
    fn drop(&mut self) {
        let outermost = FRAMES.with(|f| {
            let depth = f.depth.get() - 1;
            f.depth.set(depth);
            depth == 0 && f.retired.replace(false)
        });
        if outermost {
            free_retired();
        }
    }
}

/// Whether a callback frame is on this thread's stack: every place that calls a program's
/// callback asserts it (in debug builds), so a call that runs callbacks without a frame fails
/// the tests rather than freeing memory under a caller.
#[inline]
pub(crate) fn in_callback_frame() -> bool {
    FRAMES.with(|f| f.depth.get() > 0)
}

#[cold]
fn free_retired() {
    // Dropping an object may retire others (a context's tasks): until none are left.
    loop {
        let batch = RETIRED.with(|r| std::mem::take(&mut *r.borrow_mut()));
        if batch.is_empty() {
            return;
        }
        drop(batch);
    }
}

/// Address space reserved for slots: 2^24 objects (256 MiB of address space, committed as
/// used).
const MAX_SLOTS: usize = 1 << 24;
/// Slots committed at a time (64 KiB).
const CHUNK: usize = 4096;
/// Freed slots wait in line until this many others were freed after them.
const QUARANTINE: usize = 4096;

struct Alloc {
    /// Slots ever handed out (the next fresh slot).
    used: usize,
    free: VecDeque<usize>,
}

struct Arena {
    base: usize,
    alloc: Mutex<Alloc>,
}

/// Where the slots start (0 until the arena exists) and how many are committed: read by every
/// lookup, so plain atomics rather than behind the arena's lazy initialisation.
static BASE: AtomicUsize = AtomicUsize::new(0);
static COMMITTED: AtomicUsize = AtomicUsize::new(0);

/// The slot at `ptr`, if it is the address of a committed slot.
#[inline]
fn find(ptr: *const c_void) -> Option<&'static Slot> {
    let offset = (ptr as usize).wrapping_sub(BASE.load(Ordering::Relaxed));
    let committed = COMMITTED.load(Ordering::Acquire) * size_of::<Slot>();
    if offset >= committed || offset % size_of::<Slot>() != 0 {
        return None;
    }
    // SAFETY: a committed slot (the arena exists, since `committed` is non-zero): mapped
    // read-write for the life of the process and zero-initialised, a valid pair of atomics.
    Some(unsafe { &*(ptr as *const Slot) })
}

fn arena() -> Option<&'static Arena> {
    static ARENA: OnceLock<Option<Arena>> = OnceLock::new();
    ARENA
        .get_or_init(|| {
            // SAFETY: an anonymous private reservation; no existing mapping is touched.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    MAX_SLOTS * size_of::<Slot>(),
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return None;
            }
            BASE.store(base as usize, Ordering::Relaxed);
            Some(Arena {
                base: base as usize,
                alloc: Mutex::new(Alloc {
                    used: 0,
                    free: VecDeque::new(),
                }),
            })
        })
        .as_ref()
}

impl Arena {
    fn slot(&self, index: usize) -> &Slot {
        // SAFETY: callers pass indices below COMMITTED, whose memory is mapped read-write for
        // the life of the process and zero-initialised (a valid pair of atomics).
        unsafe { &*((self.base + index * size_of::<Slot>()) as *const Slot) }
    }

    fn take_slot(&self) -> Result<usize> {
        let mut alloc = self.alloc.lock().unwrap_or_else(|p| p.into_inner());
        if alloc.free.len() > QUARANTINE {
            if let Some(index) = alloc.free.pop_front() {
                return Ok(index);
            }
        }
        let index = alloc.used;
        if index >= MAX_SLOTS {
            return Err(err(
                ErrorCode::NoMemory,
                format!("the soft device holds its maximum of {MAX_SLOTS} live objects"),
            ));
        }
        let committed = COMMITTED.load(Ordering::Relaxed);
        if index >= committed {
            let at = self.base + committed * size_of::<Slot>();
            // SAFETY: commits the next chunk of our own reservation.
            let rc = unsafe {
                libc::mprotect(
                    at as *mut c_void,
                    CHUNK * size_of::<Slot>(),
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if rc != 0 {
                return Err(err(
                    ErrorCode::NoMemory,
                    format!(
                        "committing registry memory failed: {}",
                        std::io::Error::last_os_error()
                    ),
                ));
            }
            COMMITTED.store(committed + CHUNK, Ordering::Release);
        }
        alloc.used += 1;
        Ok(index)
    }
}

/// Registers `obj`; returns the handle C gets.
pub(crate) fn register<T: Object>(obj: Box<T>) -> Result<*mut c_void> {
    const { assert!(!T::SHARED, "a shared object: register_shared") };
    store::<T>(Box::into_raw(obj).cast())
}

/// Registers an object the model also holds; returns the handle C gets. The registry keeps
/// one strong reference until [`retire_shared`].
pub(crate) fn register_shared<T: Object>(obj: Rc<T>) -> Result<*mut c_void> {
    const { assert!(T::SHARED, "an owned object: register") };
    let raw = Rc::into_raw(obj);
    store::<T>(raw.cast_mut().cast()).inspect_err(|_| {
        // SAFETY: from `Rc::into_raw` just above, not stored anywhere.
        drop(unsafe { Rc::from_raw(raw) });
    })
}

fn store<T: Object>(obj: *mut c_void) -> Result<*mut c_void> {
    let Some(arena) = arena() else {
        return Err(err(
            ErrorCode::NoMemory,
            "the soft device could not reserve address space for its object registry",
        ));
    };
    let index = arena.take_slot()?;
    let slot = arena.slot(index);
    let generation = (slot.tag.load(Ordering::Relaxed) >> 8) + 1;
    slot.obj.store(obj, Ordering::Relaxed);
    slot.tag
        .store((generation << 8) | T::KIND as u64, Ordering::Release);
    Ok(slot as *const Slot as *mut c_void)
}

/// How many objects are registered and not yet unregistered.
#[cfg(feature = "fuzzing")]
pub(crate) fn live_count() -> usize {
    arena().map_or(0, |arena| {
        let alloc = arena.alloc.lock().unwrap_or_else(|p| p.into_inner());
        alloc.used - alloc.free.len()
    })
}

/// What a handle turned out to be.
pub(crate) enum Lookup {
    /// A live object of this kind.
    Live(Kind),
    /// A slot whose object was destroyed.
    Destroyed,
    /// Not a handle of the soft device at all.
    Unknown,
}

/// Classifies `ptr` without dereferencing it.
pub(crate) fn lookup(ptr: *const c_void) -> Lookup {
    let Some(slot) = find(ptr) else {
        return Lookup::Unknown;
    };
    let tag = slot.tag.load(Ordering::Acquire);
    match Kind::from_tag(tag) {
        Some(kind) => Lookup::Live(kind),
        None if tag != 0 => Lookup::Destroyed,
        None => Lookup::Unknown,
    }
}

/// The live object of type `T` behind `ptr`, or an error naming `param` and what is wrong.
///
/// The reference is valid until the object is retired and, if that happened inside a callback,
/// the outermost [`CallbackFrame`] returned; C objects are not thread safe (as in DOCA), so no
/// other thread destroys an object while a call uses it.
#[inline]
pub(crate) fn get<'a, T: Object>(ptr: *const c_void, param: &str) -> Result<&'a T> {
    if let Some(slot) = find(ptr) {
        if slot.tag.load(Ordering::Acquire) & 0xff == T::KIND as u64 {
            // SAFETY: slots of T::KIND point at a live Box<T> (register stored it, unregister
            // clears the kind before freeing it).
            return Ok(unsafe { &*slot.obj.load(Ordering::Relaxed).cast::<T>() });
        }
    }
    Err(refused(ptr, param, &[T::KIND]))
}

/// Like [`get`] for parameters that accept several kinds (a `struct doca_ctx *` is any
/// context, a `struct doca_task *` any task): the kind found and the object pointer.
#[inline]
pub(crate) fn resolve(
    ptr: *const c_void,
    param: &str,
    kinds: &[Kind],
) -> Result<(Kind, *mut c_void)> {
    if let Some(slot) = find(ptr) {
        let tag = slot.tag.load(Ordering::Acquire);
        if let Some(kind) = Kind::from_tag(tag).filter(|k| kinds.contains(k)) {
            return Ok((kind, slot.obj.load(Ordering::Relaxed)));
        }
    }
    Err(refused(ptr, param, kinds))
}

/// Why `ptr` is not a live object of one of `kinds`.
#[cold]
#[inline(never)]
fn refused(ptr: *const c_void, param: &str, kinds: &[Kind]) -> crate::error::Error {
    let expected = || {
        kinds
            .iter()
            .map(|k| k.c_name())
            .collect::<Vec<_>>()
            .join(" or ")
    };
    if ptr.is_null() {
        return err(
            ErrorCode::InvalidValue,
            format!("{param} is NULL: pass a {}", expected()),
        );
    }
    match lookup(ptr) {
        Lookup::Live(kind) if kinds.contains(&kind) => err(
            ErrorCode::Unexpected,
            format!("{param} ({ptr:p}) changed while it was looked up"),
        ),
        Lookup::Live(kind) => err(
            ErrorCode::InvalidValue,
            format!(
                "{param} ({ptr:p}) is a {}, not a {}",
                kind.c_name(),
                expected()
            ),
        ),
        Lookup::Destroyed => err(
            ErrorCode::InvalidValue,
            format!(
                "{param} ({ptr:p}) was destroyed: a {} is invalid after its destroy call",
                expected()
            ),
        ),
        Lookup::Unknown => err(
            ErrorCode::InvalidValue,
            format!(
                "{param} ({ptr:p}) is not a {} the soft device created",
                expected()
            ),
        ),
    }
}

/// Unregisters the object behind `ptr` and frees it: now, or — while a [`CallbackFrame`] is on
/// this thread's stack — once the outermost one returns, since that frame (or one it called)
/// may still hold a reference to it. The handle is invalid from now on either way.
pub(crate) fn retire<T: Object>(ptr: *const c_void) {
    const { assert!(!T::SHARED, "a shared object: retire_shared") };
    let Some(obj) = unregister::<T>(ptr) else {
        return;
    };
    defer_drop(obj);
}

/// [`retire`] for an object registered with [`register_shared`]: the registry's reference
/// goes (now, or when the outermost callback frame returns).
pub(crate) fn retire_shared<T: Object>(ptr: *const c_void) {
    const { assert!(T::SHARED, "an owned object: retire") };
    let Some(obj) = take::<T>(ptr) else {
        return;
    };
    // SAFETY: the slot held this pointer from `Rc::into_raw` of a T (its kind says so, and
    // T is shared) and `take` swapped it out, so the reference is reclaimed exactly once.
    defer_drop(Box::new(unsafe { Rc::from_raw(obj.cast_const()) }));
}

/// Drops `obj` now, or once the outermost callback frame returns.
fn defer_drop(obj: Box<dyn Any>) {
    if FRAMES.with(|f| f.depth.get()) == 0 {
        drop(obj);
    } else {
        RETIRED.with(|r| r.borrow_mut().push(obj));
        FRAMES.with(|f| f.retired.set(true));
    }
}

/// Unregisters the object behind `ptr` and hands it back. The handle is invalid from now on.
/// Only [`retire`] frees objects, so every free respects the callback frames.
fn unregister<T: Object>(ptr: *const c_void) -> Option<Box<T>> {
    let obj = take::<T>(ptr)?;
    // SAFETY: the slot held this pointer from `Box::into_raw` of a T (its kind says so, and T
    // is not shared) and `take` swapped it out, so it is reclaimed exactly once.
    Some(unsafe { Box::from_raw(obj) })
}

/// Unregisters the object behind `ptr`, if it is a live T, and hands back the pointer the
/// slot held.
fn take<T: Object>(ptr: *const c_void) -> Option<*mut T> {
    let arena = arena()?;
    let slot = find(ptr)?;
    let tag = slot.tag.load(Ordering::Acquire);
    if Kind::from_tag(tag) != Some(T::KIND) {
        return None;
    }
    // Keep the generation, clear the kind: later lookups see "destroyed".
    slot.tag.store(tag & !0xff, Ordering::Release);
    let obj = slot.obj.swap(std::ptr::null_mut(), Ordering::AcqRel);
    let offset = ptr as usize - arena.base;
    arena
        .alloc
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .free
        .push_back(offset / size_of::<Slot>());
    (!obj.is_null()).then_some(obj.cast::<T>())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A(u32);
    impl Object for A {
        const KIND: Kind = Kind::Pe;
    }
    struct B;
    impl Object for B {
        const KIND: Kind = Kind::Mmap;
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a PROT_NONE mmap reservation and mprotect: miri runs neither"
    )]
    fn handles_are_checked_by_kind_and_liveness() {
        let a = register(Box::new(A(7))).unwrap();
        assert_eq!(get::<A>(a, "pe").unwrap().0, 7);
        let e = get::<B>(a, "mmap").err().unwrap();
        assert!(
            e.message()
                .contains("is a struct doca_pe, not a struct doca_mmap"),
            "{e}"
        );
        assert!(unregister::<A>(a).is_some());
        let e = get::<A>(a, "pe").err().unwrap();
        assert!(e.message().contains("was destroyed"), "{e}");
        assert!(unregister::<A>(a).is_none(), "destroyed once");
        let local = 5u64;
        let e = get::<A>((&local as *const u64).cast(), "pe").err().unwrap();
        assert!(
            e.message()
                .contains("not a struct doca_pe the soft device created"),
            "{e}"
        );
        let e = get::<A>(std::ptr::null(), "pe").err().unwrap();
        assert!(e.message().contains("is NULL"), "{e}");
        // A misaligned pointer into the arena is not a handle either.
        let inside = (a as usize + 4) as *const c_void;
        assert!(matches!(lookup(inside), Lookup::Unknown));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a PROT_NONE mmap reservation and mprotect: miri runs neither"
    )]
    fn stale_handles_stay_stale_for_a_while() {
        let first = register(Box::new(B)).unwrap();
        unregister::<B>(first).unwrap();
        // The quarantine keeps the slot out of reuse for the next allocations.
        let others: Vec<_> = (0..100).map(|_| register(Box::new(B)).unwrap()).collect();
        assert!(!others.contains(&first));
        assert!(get::<B>(first, "mmap").is_err());
        for o in others {
            unregister::<B>(o).unwrap();
        }
    }
}
