//! The memory a kernel may reach in ISA mode, checked on every access.
//!
//! A kernel reaches its image (code read-only and executable, read-only data, its globals), its
//! stack, DPA memory of its context, the immediates the device API handed it, and the mmaps it
//! asked external pointers for. Anything else — a wild pointer, a freed allocation, another
//! context's memory, a write to its own code — is refused, and the interpreter turns the refusal
//! into a fatal error naming the kernel, the instruction and the address.
//!
//! The check finds the window an access falls in; the bus then grants the interpreter that
//! whole window ([`Bus::direct`]), so later accesses to it in the same run cost two compares.
//! What was checked is kept only while it holds: a grant ends with its run; when a device call
//! adds an mmap, lets the held mmaps go, or adds an immediate that lies in a range granted for
//! stores or evicts the oldest; and, with the windows the bus keeps, when memory is freed or an
//! mmap retired anywhere (the [reach generation](memory::reach_generation), part of the grants'
//! stamp). So a cached window never lets through an access the check would refuse now.

use crate::DpaShared;
use crate::memory::{self, MmapView, with_mmaps};
use crate::sync::emulated;
use dpakit_rv::Image;
use dpakit_rv::{Access, AmoOp, Bus, Direct, FaultReason, MemFault};
use std::cell::Cell;
use std::sync::Arc;

/// A range the kernel was found or given to reach.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    start: u64,
    end: u64,
    write: bool,
}

impl Window {
    const EMPTY: Window = Window {
        start: 0,
        end: 0,
        write: false,
    };
}

/// The DPA allocations an OS thread's activations found, for the next activation of the same
/// program (so of the same context) while the reach generation stays the same: a kernel's data
/// stays where it was, and no allocation was freed meanwhile.
#[derive(Clone, Copy)]
struct Found {
    program: u64,
    generation: u64,
    allocations: [Window; ALLOCATIONS],
    next: usize,
}

thread_local! {
    static FOUND: Cell<Found> = const {
        Cell::new(Found {
            program: 0,
            generation: 0,
            allocations: [Window::EMPTY; ALLOCATIONS],
            next: 0,
        })
    };
}

impl Window {
    #[inline]
    fn contains(&self, addr: u64, size: u8) -> bool {
        addr >= self.start
            && addr
                .checked_add(u64::from(size))
                .is_some_and(|e| e <= self.end)
    }

    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start < end && start < self.end
    }
}

/// Immediates remembered per activation: a kernel may hold this many unacknowledged messages'
/// immediates at once and still read the oldest.
const IMMEDIATES: usize = 64;
/// DPA memory allocations remembered per activation (looked up again when evicted).
const ALLOCATIONS: usize = 8;
/// mmaps a kernel asked external pointers for, per activation.
const MMAPS: usize = 8;

/// The checked view of memory for one activation.
pub(crate) struct DeviceBus<'a> {
    image: &'a Image,
    /// The program's id (see [`Found`]).
    program: u64,
    stack: Window,
    dpa: &'a DpaShared,
    /// Live allocations found, valid at `generation`.
    allocations: [Window; ALLOCATIONS],
    next_allocation: usize,
    generation: u64,
    immediates: [Window; IMMEDIATES],
    next_immediate: usize,
    /// Entries of `immediates` in use (the first ones).
    granted: usize,
    mmaps: [u32; MMAPS],
    next_mmap: usize,
    /// The views of mmaps granted for direct access (by `mmaps` slot): their memory stays
    /// registered until [`release`](Self::release).
    held: [Option<Arc<MmapView>>; MMAPS],
    /// Whether `held` holds any.
    holding: bool,
    /// Counts the changes of this activation's windows that may end a grant (an immediate
    /// added over a range granted for stores, or evicting one; an mmap added; held mmaps let
    /// go): with the reach generation, the stamp of the grants.
    epoch: u64,
    /// The ranges granted for stores in this epoch (`None`: more than fit), which a new
    /// immediate must not lie in.
    stores: Option<[Window; STORE_GRANTS]>,
    store_grants: usize,
}

/// Ranges granted for stores an epoch remembers (a kernel's stack, its data, a buffer or two).
const STORE_GRANTS: usize = 4;

impl<'a> DeviceBus<'a> {
    /// The view of an activation of a kernel of `image` (of the program with id `program`) on
    /// `dpa`, with the stack `[start, end)`. Inlined: built in place, not copied (it is large).
    #[inline(always)]
    pub(crate) fn new(
        image: &'a Image,
        program: u64,
        dpa: &'a DpaShared,
        stack: (u64, u64),
    ) -> Self {
        let generation = memory::reach_generation();
        let found = FOUND.with(Cell::get);
        let (allocations, next_allocation) =
            match found.program == program && found.generation == generation {
                true => (found.allocations, found.next),
                false => ([Window::default(); ALLOCATIONS], 0),
            };
        Self {
            image,
            program,
            stack: Window {
                start: stack.0,
                end: stack.1,
                write: true,
            },
            dpa,
            allocations,
            next_allocation,
            generation,
            immediates: [Window::default(); IMMEDIATES],
            next_immediate: 0,
            granted: 0,
            mmaps: [0; MMAPS],
            next_mmap: 0,
            held: Default::default(),
            holding: false,
            epoch: 0,
            stores: Some([Window::default(); STORE_GRANTS]),
            store_grants: 0,
        }
    }

    /// The device API handed the kernel an immediate at `[addr, addr + len)`: it may read it.
    /// Grants end if it lies in a range granted for stores (a store there is refused now) or
    /// if it evicts the oldest immediate (whose grant must end).
    pub(crate) fn grant_immediate(&mut self, addr: u64, len: u64) {
        let w = Window {
            start: addr,
            end: addr.saturating_add(len),
            write: false,
        };
        let under_store_grant = self
            .stores
            .is_none_or(|stores| stores.iter().any(|g| g.overlaps(w.start, w.end)));
        if under_store_grant || self.granted == IMMEDIATES {
            self.new_epoch();
        }
        self.immediates[self.next_immediate] = w;
        self.next_immediate = (self.next_immediate + 1) % IMMEDIATES;
        self.granted = (self.granted + 1).min(IMMEDIATES);
    }

    /// The kernel asked an external pointer into `mmap`: it may access the mmap's memory.
    /// Every grant ends, as for `grant_immediate` (the new mmap may share memory with one).
    pub(crate) fn grant_mmap(&mut self, mmap: u32) {
        if !self.mmaps.contains(&mmap) {
            self.new_epoch();
            self.mmaps[self.next_mmap] = mmap;
            self.next_mmap = (self.next_mmap + 1) % MMAPS;
        }
    }

    /// Lets go of the mmaps held for direct access, ending their grants: call before anything
    /// that may end the activation (which leaves without unwinding): a device call, a fault.
    #[inline]
    pub(crate) fn release(&mut self) {
        if self.holding {
            self.held = Default::default();
            self.holding = false;
            self.new_epoch();
        }
    }

    /// Ends every grant.
    fn new_epoch(&mut self) {
        self.epoch += 1;
        self.stores = Some([Window::default(); STORE_GRANTS]);
        self.store_grants = 0;
    }

    /// Remembers `[start, end)`, granted for stores in this epoch.
    fn granted_for_stores(&mut self, start: u64, end: u64) {
        if let Some(stores) = &mut self.stores {
            match stores.get_mut(self.store_grants) {
                Some(slot) => {
                    *slot = Window {
                        start,
                        end,
                        write: true,
                    }
                }
                None => self.stores = None,
            }
            self.store_grants += 1;
        }
    }

    /// The stamp of grants made now (see [`Bus::stamp`]): both counts only grow, so their sum
    /// changes whenever either does.
    #[inline(always)]
    fn current_stamp(&self) -> u64 {
        memory::reach_generation().wrapping_add(self.epoch)
    }

    /// The stack's lowest address (diagnostics: an access just below it is an overflow).
    pub(crate) fn stack_start(&self) -> u64 {
        self.stack.start
    }

    /// The window other than an mmap that holds `[addr, addr + size)`, looked for in this
    /// order: the stack, the image's segments, DPA memory allocations found before, immediates,
    /// then the context's live allocations. None: only an mmap could hold it.
    fn window(&mut self, addr: u64, size: u8) -> Option<Window> {
        if self.stack.contains(addr, size) {
            return Some(self.stack);
        }
        // Allocations found before a free anywhere may be the freed one.
        let generation = memory::reach_generation();
        if generation != self.generation {
            self.allocations = [Window::default(); ALLOCATIONS];
            self.generation = generation;
        }
        let end = addr.checked_add(u64::from(size))?;
        let segment = self
            .image
            .segments
            .iter()
            .find(|s| addr >= s.start && end <= s.end);
        if let Some(s) = segment {
            return Some(Window {
                start: s.start,
                end: s.end,
                write: s.perm.write,
            });
        }
        let known = self
            .allocations
            .iter()
            .chain(&self.immediates[..self.granted])
            .find(|w| w.contains(addr, size));
        if let Some(w) = known {
            return Some(*w);
        }
        let (start, end) = self
            .dpa
            .memory
            .allocation_containing(addr, u64::from(size))?;
        let w = Window {
            start,
            end,
            write: true,
        };
        self.allocations[self.next_allocation] = w;
        self.next_allocation = (self.next_allocation + 1) % ALLOCATIONS;
        FOUND.with(|f| {
            f.set(Found {
                program: self.program,
                generation: self.generation,
                allocations: self.allocations,
                next: self.next_allocation,
            })
        });
        Some(w)
    }

    /// Checks an access that is not to mmap memory; `Ok(false)` when only an mmap could hold it.
    #[inline]
    fn check(&mut self, addr: u64, size: u8, access: Access) -> Result<bool, MemFault> {
        match self.window(addr, size) {
            Some(w) if access != Access::Load && !w.write => Err(MemFault {
                addr,
                size,
                access,
                reason: FaultReason::ReadOnly,
            }),
            found => Ok(found.is_some()),
        }
    }

    /// Whether a window the kernel may only read lies in `[start, end)`: a store there may be
    /// refused, so the range is not granted for stores.
    fn read_only_within(&self, start: u64, end: u64) -> bool {
        let segment = self
            .image
            .segments
            .iter()
            .any(|s| !s.perm.write && s.start < end && start < s.end);
        segment
            || self.immediates[..self.granted]
                .iter()
                .any(|w| w.overlaps(start, end))
    }

    /// Runs `f` if `[addr, addr + size)` is reachable for `access`; mmap memory stays registered
    /// while `f` runs.
    #[inline]
    fn access<R>(
        &mut self,
        addr: u64,
        size: u8,
        access: Access,
        f: impl FnOnce() -> R,
    ) -> Result<R, MemFault> {
        if self.check(addr, size, access)? {
            return Ok(f());
        }
        let write = access != Access::Load;
        let reason = with_mmaps(self.dpa, self.mmaps, |views| {
            let view = views
                .iter()
                .flatten()
                .find(|v| v.contains(addr, u64::from(size)));
            match view {
                None => Err(FaultReason::Unmapped),
                Some(v) if write && !v.writable => Err(FaultReason::ReadOnly),
                // The view keeps the mmap's memory registered until with_mmaps returns.
                Some(_) => Ok(f()),
            }
        });
        reason.map_err(|reason| MemFault {
            addr,
            size,
            access,
            reason,
        })
    }

    /// A grant of the mmap that holds `[addr, addr + size)`, the first in `mmaps` as the check
    /// finds it; writable only if no other mmap shares its memory (the check could find that
    /// one first) and no read-only window lies in it. The mmap is held until `release`.
    fn grant_from_mmaps(&mut self, addr: u64, size: u8, store: bool, stamp: u64) -> Option<Direct> {
        let views = memory::hold_mmaps(self.dpa, self.mmaps);
        let i = views.iter().position(|v| {
            v.as_ref()
                .is_some_and(|v| v.contains(addr, u64::from(size)))
        })?;
        let view = views[i].as_ref()?;
        if store && !view.writable {
            return None;
        }
        let (start, end) = (view.base, view.base + view.len);
        let shared = views.iter().enumerate().any(|(j, w)| {
            j != i
                && w.as_ref()
                    .is_some_and(|w| w.base < end && start < w.base + w.len)
        });
        let writable = view.writable && !shared && !self.read_only_within(start, end);
        if store && !writable {
            return None;
        }
        // SAFETY: the held view keeps the mmap's memory registered until `release`, which ends
        // the grant (a new stamp), as does a retired mmap; until then the check above grants
        // every load in it (and every store, if writable).
        let grant = unsafe { Direct::new(start, view.len, host(start), writable, stamp) };
        if writable {
            self.granted_for_stores(start, end);
        }
        self.held[i] = views.into_iter().nth(i).flatten();
        self.holding = true;
        Some(grant)
    }
}

/// The host pointer of a device address (the soft device's device addresses are host ones).
fn host(addr: u64) -> *mut u8 {
    std::ptr::with_exposed_provenance_mut(addr as usize)
}

impl Bus for DeviceBus<'_> {
    #[inline]
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemFault> {
        for s in &self.image.segments {
            if s.perm.exec && addr >= s.start && addr + 2 <= s.end {
                // SAFETY: inside a segment of the loaded image, which lives as long as the bus;
                // the interpreter keeps pc 2-byte aligned.
                return Ok(unsafe { emulated::load(addr, 2) } as u16);
            }
        }
        Err(MemFault {
            addr,
            size: 2,
            access: Access::Fetch,
            reason: if self.check(addr, 2, Access::Load).unwrap_or(false) {
                FaultReason::NotExecutable
            } else {
                FaultReason::Unmapped
            },
        })
    }

    /// The image's code segments are read-only to kernels and stay loaded while its program
    /// lives: their instructions never change under an activation.
    fn code_is_fixed(&self, addr: u64, len: u8) -> bool {
        let end = addr.saturating_add(u64::from(len));
        self.image
            .segments
            .iter()
            .any(|s| s.perm.exec && !s.perm.write && addr >= s.start && end <= s.end)
    }

    #[inline]
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemFault> {
        // SAFETY: `access` calls the closure only for a reachable, live range; the interpreter
        // checked the alignment.
        self.access(addr, size, Access::Load, || unsafe {
            emulated::load(addr, size)
        })
    }

    #[inline]
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemFault> {
        // SAFETY: as in `load`, for a writable range.
        self.access(addr, size, Access::Store, || unsafe {
            emulated::store(addr, size, value)
        })
    }

    fn amo(&mut self, addr: u64, size: u8, op: AmoOp, operand: u64) -> Result<u64, MemFault> {
        // SAFETY: as in `store`.
        self.access(addr, size, Access::Atomic, || unsafe {
            emulated::update(addr, size, |old| op.apply(size, old, operand))
        })
    }

    fn cas(&mut self, addr: u64, size: u8, expected: u64, new: u64) -> Result<bool, MemFault> {
        // SAFETY: as in `store`.
        self.access(addr, size, Access::Atomic, || unsafe {
            emulated::compare_exchange(addr, size, expected, new)
        })
    }

    /// The window the check finds for the access, whole. Refusals are left to `load` and
    /// `store`, which name them.
    fn direct(&mut self, addr: u64, size: u8, access: Access) -> Option<Direct> {
        // Read before the check: a window made unreachable after it changes the stamp.
        let stamp = self.current_stamp();
        let store = access == Access::Store;
        let Some(w) = self.window(addr, size) else {
            return self.grant_from_mmaps(addr, size, store, stamp);
        };
        let writable = w.write && !self.read_only_within(w.start, w.end);
        if store && !writable {
            return None;
        }
        if writable {
            self.granted_for_stores(w.start, w.end);
        }
        // SAFETY: the image's segments live as long as the bus, the stack as long as this
        // thread, an allocation until this activation ends even if freed (the grace period),
        // an immediate as long as its consumer. The check grants every load in the window (and
        // every store, if writable: no read-only window lies in it) until memory is freed, an
        // mmap retired, or a window added that a store grant holds or that evicts another,
        // each of which changes the stamp.
        Some(unsafe { Direct::new(w.start, w.end - w.start, host(w.start), writable, stamp) })
    }

    #[inline(always)]
    fn stamp(&self) -> u64 {
        self.current_stamp()
    }
}

impl DeviceBus<'_> {
    /// Copies `out.len()` bytes from the kernel's memory at `addr` (a device function's input).
    pub(crate) fn read_bytes(&mut self, addr: u64, out: &mut [u8]) -> Result<(), MemFault> {
        // One check for the whole range when it is small enough to be one access and lies in
        // one region (the usual case: an immediate, a name); byte by byte otherwise, so a
        // range that spans regions, or runs into an unmapped byte, gets that byte's fault.
        if let Ok(len @ 1..) = u8::try_from(out.len()) {
            let whole = self.access(addr, len, Access::Load, || {
                for (i, byte) in out.iter_mut().enumerate() {
                    // SAFETY: `access` found all of `[addr, addr + len)` reachable and live;
                    // single bytes need no alignment.
                    *byte = unsafe { emulated::load(addr.wrapping_add(i as u64), 1) } as u8;
                }
            });
            if whole.is_ok() {
                return Ok(());
            }
        }
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = self.load(addr.wrapping_add(i as u64), 1)? as u8;
        }
        Ok(())
    }

    /// Writes `value` (`size` bytes) for a device function's out-parameter.
    pub(crate) fn write_out(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemFault> {
        if addr % u64::from(size) != 0 {
            return Err(MemFault {
                addr,
                size,
                access: Access::Store,
                reason: FaultReason::Misaligned,
            });
        }
        self.store(addr, size, value)
    }
}

/// The `n`th argument of the call in registers `x` (integer class): a0–a7, then 8-byte stack
/// slots.
pub(super) fn arg(x: &[u64; 32], bus: &mut DeviceBus<'_>, n: usize) -> Result<u64, MemFault> {
    use dpakit_rv::reg::{A0, SP};
    match n {
        0..8 => Ok(x[A0 + n]),
        _ => bus.load(x[SP].wrapping_add(8 * (n as u64 - 8)), 8),
    }
}
