//! Direct access: the hart uses a range the bus granted without calling it, and goes back to
//! the bus — whose refusal then stops it exactly — as soon as the grant may no longer hold: a
//! new stamp, a store to a range granted for loads, an access past the range, a new run.

// A bus that grants host memory is unsafe to write (`Direct::new`).
#![allow(unsafe_code)]

use super::*;
use crate::Direct;
use dpakit_sync::emulated;
use std::cell::Cell;

/// Memory [TEXT, END) that the bus and the hart both reach through atomics at the same host
/// address; the bus grants [DATA, END) (for stores too if `writable`) until it is revoked.
struct GrantBus {
    /// Reached only through `host` (a raw pointer), never through a reference.
    mem: *mut u64,
    writable: bool,
    revoked: Cell<bool>,
    stamp: Cell<u64>,
    /// Revokes the data range at the stamp read that takes this to 0 (`None`: never).
    revoke_in: Cell<Option<u32>>,
    /// Ranges granted, and loads and stores made through the bus.
    grants: usize,
    calls: usize,
}

impl GrantBus {
    fn new(code: &[u32], writable: bool) -> Self {
        let words = vec![0u64; ((END - TEXT) / 8) as usize].into_boxed_slice();
        let bus = Self {
            mem: Box::into_raw(words).cast(),
            writable,
            revoked: Cell::new(false),
            stamp: Cell::new(0),
            revoke_in: Cell::new(None),
            grants: 0,
            calls: 0,
        };
        for (i, w) in code.iter().enumerate() {
            // SAFETY: inside the memory, 4-byte aligned.
            unsafe { emulated::store(bus.at(TEXT + 4 * i as u64), 4, u64::from(*w)) };
        }
        bus
    }

    fn host(&self, addr: u64) -> *mut u8 {
        self.mem.cast::<u8>().wrapping_add((addr - TEXT) as usize)
    }

    /// `host` as the emulated accessors take it, its provenance exposed.
    fn at(&self, addr: u64) -> u64 {
        self.host(addr).expose_provenance() as u64
    }

    /// The bus's check: the data range while it is not revoked (read-only unless `writable`).
    fn check(&self, addr: u64, size: u8, access: Access) -> Result<(), MemFault> {
        let fault = |reason| MemFault {
            addr,
            size,
            access,
            reason,
        };
        if addr < DATA || addr + u64::from(size) > END || self.revoked.get() {
            return Err(fault(FaultReason::Unmapped));
        }
        if access == Access::Store && !self.writable {
            return Err(fault(FaultReason::ReadOnly));
        }
        Ok(())
    }

    fn word(&self, addr: u64) -> u64 {
        // SAFETY: an aligned word of the memory.
        unsafe { emulated::load(self.at(addr), 8) }
    }

    fn set_word(&self, addr: u64, v: u64) {
        // SAFETY: an aligned word of the memory.
        unsafe { emulated::store(self.at(addr), 8, v) }
    }
}

impl Drop for GrantBus {
    fn drop(&mut self) {
        let words = std::ptr::slice_from_raw_parts_mut(self.mem, ((END - TEXT) / 8) as usize);
        // SAFETY: the boxed slice `new` leaked, used by nothing once the bus goes.
        drop(unsafe { Box::from_raw(words) });
    }
}

impl Bus for GrantBus {
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemFault> {
        // SAFETY: code inside the memory, 2-byte aligned (the hart fetches even addresses).
        Ok(unsafe { emulated::load(self.at(addr), 2) } as u16)
    }

    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemFault> {
        self.calls += 1;
        self.check(addr, size, Access::Load)?;
        // SAFETY: checked inside the memory; the hart aligned it.
        Ok(unsafe { emulated::load(self.at(addr), size) })
    }

    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemFault> {
        self.calls += 1;
        self.check(addr, size, Access::Store)?;
        assert_eq!(size, 8, "the programs store words");
        self.set_word(addr, value);
        Ok(())
    }

    fn amo(&mut self, addr: u64, size: u8, _: AmoOp, _: u64) -> Result<u64, MemFault> {
        unreachable!("no atomics here ({addr:#x}, {size})")
    }

    fn cas(&mut self, addr: u64, size: u8, _: u64, _: u64) -> Result<bool, MemFault> {
        unreachable!("no atomics here ({addr:#x}, {size})")
    }

    fn direct(&mut self, addr: u64, size: u8, access: Access) -> Option<Direct> {
        self.check(addr, size, access).ok()?;
        self.grants += 1;
        // SAFETY: the memory lives as long as the bus, which the run borrows; every access of
        // the range is one `check` allows (with the same `writable`) until `revoked`, which
        // changes the stamp.
        Some(unsafe {
            Direct::new(
                DATA,
                END - DATA,
                self.host(DATA),
                self.writable,
                self.stamp.get(),
            )
        })
    }

    fn stamp(&self) -> u64 {
        if let Some(n) = self.revoke_in.get() {
            self.revoke_in.set(n.checked_sub(1));
            if n == 1 {
                self.revoked.set(true);
                self.stamp.set(self.stamp.get() + 1);
            }
        }
        self.stamp.get()
    }
}

/// `a0 = sum of the word at DATA, added a2 times`, the running sum stored at DATA + 8 each
/// time: a load and a store per round.
fn sum_and_store() -> [u32; 7] {
    [
        addi(T0, ZERO, 0),
        addi(A0, ZERO, 0),
        ld(T1, A1, 0), // loop:
        add(A0, A0, T1),
        sd(A0, A1, 8),
        addi(T0, T0, 1),
        bne(T0, A2, -16),
    ]
}

fn program() -> Vec<u32> {
    let mut code = sum_and_store().to_vec();
    code.push(RET);
    code
}

fn run(bus: &mut GrantBus, rounds: u64) -> (Hart, Stop) {
    bus.set_word(DATA, 5);
    let mut hart = Hart::new();
    hart.prepare_call(TEXT, EXIT, END, &[0, DATA, rounds]);
    let (stop, _) = hart.run_cached(bus, &mut DecodeCache::new(), EXIT, 10_000);
    (hart, stop)
}

#[test]
fn a_granted_range_is_accessed_without_the_bus() {
    let mut bus = GrantBus::new(&program(), true);
    let (hart, stop) = run(&mut bus, 10);
    assert_eq!(stop, Stop::Returned);
    assert_eq!((hart.x[A0], bus.word(DATA + 8)), (50, 50));
    // One grant for the first load; the store and every later access used it.
    assert_eq!((bus.grants, bus.calls), (1, 0));
}

#[test]
fn a_revoked_range_faults_at_the_next_access_after_it_was_used() {
    // Stamp reads: the first load reads two (a miss, then the grant), every other access one.
    // The fifth read, the second round's store, sees the range revoked.
    let mut bus = GrantBus::new(&program(), true);
    bus.revoke_in.set(Some(5));
    let (hart, stop) = run(&mut bus, 10);
    let fault = MemFault {
        addr: DATA + 8,
        size: 8,
        access: Access::Store,
        reason: FaultReason::Unmapped,
    };
    assert_eq!(
        stop,
        Stop::Fault {
            pc: TEXT + 16,
            fault
        }
    );
    // Stopped at the store: the second round's load and add ran, its store did not.
    assert_eq!(
        (hart.pc, hart.x[A0], bus.word(DATA + 8)),
        (TEXT + 16, 10, 5)
    );
    // The bus refused the store itself, once.
    assert_eq!((bus.grants, bus.calls), (1, 1));
}

#[test]
fn a_range_granted_for_loads_sends_stores_to_the_bus() {
    let mut bus = GrantBus::new(&program(), false);
    let (hart, stop) = run(&mut bus, 10);
    let fault = MemFault {
        addr: DATA + 8,
        size: 8,
        access: Access::Store,
        reason: FaultReason::ReadOnly,
    };
    assert_eq!(
        stop,
        Stop::Fault {
            pc: TEXT + 16,
            fault
        }
    );
    assert_eq!((hart.x[A0], bus.word(DATA + 8)), (5, 0));
    assert_eq!((bus.grants, bus.calls), (1, 1));
}

#[test]
fn an_access_running_past_the_range_goes_to_the_bus() {
    // A word load at the range's last 4 bytes (misaligned for 8, so a word: lw at END - 4)
    // lies inside; a load at END does not, and the bus refuses it.
    let mut bus = GrantBus::new(&[lw(A0, A1, -4), ld(A0, A1, 0), RET], true);
    let mut hart = Hart::new();
    hart.prepare_call(TEXT, EXIT, END, &[0, END]);
    let (stop, retired) = hart.run(&mut bus, EXIT, 100);
    let fault = MemFault {
        addr: END,
        size: 8,
        access: Access::Load,
        reason: FaultReason::Unmapped,
    };
    assert_eq!(
        (stop, retired),
        (
            Stop::Fault {
                pc: TEXT + 4,
                fault
            },
            1
        )
    );
    assert_eq!((bus.grants, bus.calls), (1, 1));
}

#[test]
fn grants_end_with_their_run() {
    let mut granting = GrantBus::new(&program(), true);
    let (mut hart, stop) = run(&mut granting, 3);
    assert_eq!((stop, hart.x[A0]), (Stop::Returned, 15));
    // The same hart on a bus that grants nothing: every access goes to it, none to the memory
    // of the first.
    let mut plain = VecBus::new();
    for (i, w) in program().iter().enumerate() {
        plain.poke(TEXT + 4 * i as u64, 4, u64::from(*w));
    }
    plain.poke(DATA, 8, 7);
    hart.prepare_call(TEXT, EXIT, END, &[0, DATA, 3]);
    let (stop, _) = hart.run_cached(&mut plain, &mut DecodeCache::new(), EXIT, 10_000);
    assert_eq!(
        (stop, hart.x[A0], plain.peek(DATA + 8, 8)),
        (Stop::Returned, 21, 21)
    );
    assert_eq!(plain.data_calls, 6);
    assert_eq!(granting.word(DATA + 8), 15);
}

#[test]
#[should_panic(expected = "not aligned alike")]
fn a_grant_must_keep_alignment() {
    let mut word = 0u64;
    let host: *mut u64 = &mut word;
    // SAFETY: never used: the grant is refused.
    let _ = unsafe { Direct::new(DATA + 1, 4, host.cast(), false, 0) };
}
