//! The memory a kernel may reach in ISA mode, checked on every access.
//!
//! A kernel reaches its image (code read-only and executable, read-only data, its globals), its
//! stack, DPA memory of its context, the immediates the device API handed it, and the mmaps it
//! asked external pointers for. Anything else — a wild pointer, a freed allocation, another
//! context's memory, a write to its own code — is refused, and the interpreter turns the refusal
//! into a fatal error naming the kernel, the instruction and the address.

use crate::DpaShared;
use crate::memory::with_mmaps;
use crate::sync::emulated;
use dpakit_rv::Access;
use dpakit_rv::Image;
use dpakit_rv::{AmoOp, Bus, FaultReason, MemFault};

/// A range the kernel was found or given to reach.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    start: u64,
    end: u64,
    write: bool,
}

impl Window {
    #[inline]
    fn contains(&self, addr: u64, size: u8) -> bool {
        addr >= self.start
            && addr
                .checked_add(u64::from(size))
                .is_some_and(|e| e <= self.end)
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
    stack: Window,
    dpa: &'a DpaShared,
    allocations: [Window; ALLOCATIONS],
    next_allocation: usize,
    immediates: [Window; IMMEDIATES],
    next_immediate: usize,
    mmaps: [u32; MMAPS],
    next_mmap: usize,
    /// The window the last checked access fell in, looked at first (a kernel's accesses
    /// cluster); emptied whenever a window is replaced, so it never outlives its grant.
    last: Window,
}

impl<'a> DeviceBus<'a> {
    /// The view of an activation of a kernel of `image` on `dpa`, with the stack `[start, end)`.
    pub(crate) fn new(image: &'a Image, dpa: &'a DpaShared, stack: (u64, u64)) -> Self {
        Self {
            image,
            stack: Window {
                start: stack.0,
                end: stack.1,
                write: true,
            },
            dpa,
            allocations: [Window::default(); ALLOCATIONS],
            next_allocation: 0,
            immediates: [Window::default(); IMMEDIATES],
            next_immediate: 0,
            mmaps: [0; MMAPS],
            next_mmap: 0,
            last: Window::default(),
        }
    }

    /// The device API handed the kernel an immediate at `[addr, addr + len)`: it may read it.
    pub(crate) fn grant_immediate(&mut self, addr: u64, len: u64) {
        self.immediates[self.next_immediate] = Window {
            start: addr,
            end: addr.saturating_add(len),
            write: false,
        };
        self.next_immediate = (self.next_immediate + 1) % IMMEDIATES;
        // The oldest immediate's window may have been the last one hit.
        self.last = Window::default();
    }

    /// The kernel asked an external pointer into `mmap`: it may access the mmap's memory.
    pub(crate) fn grant_mmap(&mut self, mmap: u32) {
        if !self.mmaps.contains(&mmap) {
            self.mmaps[self.next_mmap] = mmap;
            self.next_mmap = (self.next_mmap + 1) % MMAPS;
        }
    }

    /// The stack's lowest address (diagnostics: an access just below it is an overflow).
    pub(crate) fn stack_start(&self) -> u64 {
        self.stack.start
    }

    /// Checks an access that is not to mmap memory; `Ok(false)` when only an mmap could hold it.
    #[inline]
    fn check(&mut self, addr: u64, size: u8, access: Access) -> Result<bool, MemFault> {
        let fault = |reason| MemFault {
            addr,
            size,
            access,
            reason,
        };
        let write = access != Access::Load;
        if self.stack.contains(addr, size) {
            return Ok(true);
        }
        let hit = |w: Window| {
            if write && !w.write {
                Err(fault(FaultReason::ReadOnly))
            } else {
                Ok(true)
            }
        };
        if self.last.contains(addr, size) {
            return hit(self.last);
        }
        let end = addr.checked_add(u64::from(size));
        let segment = self
            .image
            .segments
            .iter()
            .find(|s| addr >= s.start && end.is_some_and(|e| e <= s.end));
        let window = match segment {
            Some(s) => Some(Window {
                start: s.start,
                end: s.end,
                write: s.perm.write,
            }),
            None => self
                .allocations
                .iter()
                .chain(&self.immediates)
                .find(|w| w.contains(addr, size))
                .copied(),
        };
        if let Some(w) = window {
            self.last = w;
            return hit(w);
        }
        if let Some((start, end)) = self.dpa.memory.allocation_containing(addr, u64::from(size)) {
            let w = Window {
                start,
                end,
                write: true,
            };
            self.allocations[self.next_allocation] = w;
            self.next_allocation = (self.next_allocation + 1) % ALLOCATIONS;
            // The evicted allocation's window may have been the last one hit.
            self.last = w;
            return Ok(true);
        }
        Ok(false)
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

/// The `n`th argument of the call (integer class): a0–a7, then 8-byte stack slots.
pub(super) fn arg(
    hart: &dpakit_rv::Hart,
    bus: &mut DeviceBus<'_>,
    n: usize,
) -> Result<u64, MemFault> {
    if n < 8 {
        Ok(hart.x[dpakit_rv::reg::A0 + n])
    } else {
        bus.load(
            hart.x[dpakit_rv::reg::SP].wrapping_add(8 * (n as u64 - 8)),
            8,
        )
    }
}
