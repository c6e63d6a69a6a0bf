//! The C API target's world: every handle an input got (live or destroyed), how the input
//! picks handles for arguments, and the teardown that destroys whatever is left, so that a
//! handle the soft device cannot take back shows as a leak.

pub mod happy;

use crate::support::Bytes;
use dpakit_emu::fuzzing::{live_kind, live_objects};
use dpakit_sys::*;
use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr::null_mut;

/// The kinds of handles the API hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum K {
    Devinfo,
    DevinfoRep,
    Dev,
    DevRep,
    Pe,
    Mmap,
    Inventory,
    Buf,
    Msgq,
    Consumer,
    Producer,
    ConsComp,
    Dpa,
    Thread,
    DpaComp,
    Notif,
    Affinity,
    SendTask,
    RecvTask,
    Server,
    Client,
    Conn,
    ComchTask,
}

/// Completion callbacks of receive and send tasks.
pub type RecvCb =
    unsafe extern "C" fn(*mut doca_comch_consumer_task_post_recv, doca_data, doca_data);
pub type SendCb = unsafe extern "C" fn(*mut doca_comch_producer_task_send, doca_data, doca_data);

/// Contexts: what `struct doca_ctx *` parameters take.
pub const CTX: &[K] = &[K::Consumer, K::Producer, K::Server, K::Client];
/// Tasks: what `struct doca_task *` parameters take.
pub const TASK: &[K] = &[K::SendTask, K::RecvTask, K::ComchTask];

thread_local! {
    /// Handles the soft device passed to callbacks (connections), for the world to adopt.
    pub static ADOPT: RefCell<Vec<(K, *mut c_void)>> = const { RefCell::new(Vec::new()) };
}

/// A word of memory that is not a handle (a stray pointer to the caller's own memory).
static STRAY: [u64; 4] = [0x5a5a; 4];

/// Host memory for mmaps and buffers, owned by the input for its whole run.
pub const MEM_LEN: usize = 64 * 1024;

pub struct World {
    /// Every handle seen, in creation order.
    pub objs: Vec<(K, *mut c_void)>,
    pub devinfo_lists: Vec<*mut *mut doca_devinfo>,
    pub rep_lists: Vec<*mut *mut doca_devinfo_rep>,
    /// Device memory allocated on some DPA.
    pub dev_ptrs: Vec<u64>,
    pub mem: Box<[u8]>,
}

impl World {
    pub fn new() -> Self {
        World {
            objs: Vec::new(),
            devinfo_lists: Vec::new(),
            rep_lists: Vec::new(),
            dev_ptrs: Vec::new(),
            mem: vec![0u8; MEM_LEN].into_boxed_slice(),
        }
    }

    /// Records a handle an API call produced.
    pub fn add(&mut self, kind: K, handle: *mut c_void) {
        if !handle.is_null() && !self.objs.contains(&(kind, handle)) {
            self.objs.push((kind, handle));
        }
    }

    /// Takes in the handles callbacks saw.
    pub fn adopt(&mut self) {
        let seen = ADOPT.with(|a| std::mem::take(&mut *a.borrow_mut()));
        for (k, h) in seen {
            self.add(k, h);
        }
    }

    /// A handle for a parameter that wants one of `kinds`: mostly one of those (live or
    /// destroyed), else NULL, a stray pointer, or any handle of any kind.
    pub fn pick(&self, b: &mut Bytes<'_>, kinds: &[K]) -> *mut c_void {
        let sel = b.u8();
        match sel % 16 {
            0 => null_mut(),
            1 => STRAY.as_ptr().cast_mut().cast(),
            2 if !self.objs.is_empty() => self.objs[usize::from(b.u8()) % self.objs.len()].1,
            _ => {
                let of: Vec<*mut c_void> = self
                    .objs
                    .iter()
                    .filter(|(k, _)| kinds.contains(k))
                    .map(|&(_, h)| h)
                    .collect();
                if of.is_empty() {
                    null_mut()
                } else {
                    // Prefer the newest: older ones are more often destroyed.
                    let i = usize::from(b.u8());
                    of[of.len() - 1 - i % of.len()]
                }
            }
        }
    }

    pub fn one<T>(&self, b: &mut Bytes<'_>, kind: K) -> *mut T {
        self.pick(b, &[kind]).cast()
    }

    /// A range of the input's memory: `(addr, len)`, inside it.
    pub fn range(&mut self, b: &mut Bytes<'_>) -> (*mut u8, usize) {
        let off = usize::from(b.u16()) % MEM_LEN;
        let len = usize::from(b.u16()) % (MEM_LEN - off + 1);
        // SAFETY: `off < MEM_LEN`: inside the allocation.
        (unsafe { self.mem.as_mut_ptr().add(off) }, len)
    }

    /// An address near the input's memory, in range or not (the soft device checks these
    /// against its mmaps and never touches them unchecked).
    pub fn near(&self, b: &mut Bytes<'_>) -> *mut c_void {
        let off = i64::from(b.u16() as i16) * 4;
        (self.mem.as_ptr() as i64 + off) as *mut c_void
    }

    /// A device address: one allocated, one near it, or any value.
    pub fn dev_ptr(&self, b: &mut Bytes<'_>) -> u64 {
        match b.u8() % 4 {
            0 => b.u64(),
            _ if self.dev_ptrs.is_empty() => u64::from(b.u16()),
            1 => self.dev_ptrs[usize::from(b.u8()) % self.dev_ptrs.len()]
                .wrapping_add(u64::from(b.u8())),
            _ => self.dev_ptrs[usize::from(b.u8()) % self.dev_ptrs.len()],
        }
    }

    fn live(&self) -> Vec<(K, *mut c_void)> {
        self.objs
            .iter()
            .copied()
            .filter(|&(_, h)| live_kind(h).is_some())
            .collect()
    }

    /// Destroys everything left, in rounds (contexts stop through their PE, which needs
    /// progress); panics naming what the soft device would not give back.
    pub fn teardown(&mut self) {
        if std::env::var_os("DPAKIT_FUZZ_STATS").is_some() {
            // Which kinds an input left live: what the corpus reaches (a tuning aid).
            let mut kinds: Vec<String> =
                self.live().iter().map(|(k, _)| format!("{k:?}")).collect();
            kinds.sort();
            kinds.dedup();
            eprintln!("live at teardown: {}", kinds.join(" "));
        }
        for _ in 0..16 {
            self.adopt();
            let live = self.live();
            if live.is_empty() && self.devinfo_lists.is_empty() && self.rep_lists.is_empty() {
                break;
            }
            for &(k, h) in &live {
                if k == K::Pe {
                    for _ in 0..4 {
                        // SAFETY: a live PE.
                        unsafe { doca_pe_progress(h.cast()) };
                    }
                }
            }
            for &(k, h) in live.iter().rev() {
                if live_kind(h).is_some() {
                    // SAFETY: live handles of their kinds; every call checks them anyway.
                    unsafe { destroy(k, h) };
                }
            }
            self.devinfo_lists
                // SAFETY: lists the soft device made and has not destroyed.
                .retain(|&l| unsafe { doca_devinfo_destroy_list(l) } != DOCA_SUCCESS);
            self.rep_lists
                // SAFETY: as above.
                .retain(|&l| unsafe { doca_devinfo_rep_destroy_list(l) } != DOCA_SUCCESS);
        }
        let left = self.live();
        let count = live_objects();
        if !left.is_empty() || count != 0 {
            let names: Vec<String> = left
                .iter()
                .map(|&(k, h)| format!("{k:?} {h:p} ({})", live_kind(h).unwrap_or("?")))
                .collect();
            panic!(
                "{count} handles still live after teardown (a leak, or an object that cannot \
                 be destroyed): {names:?}; last error: {}",
                last_error()
            );
        }
        self.objs.clear();
        self.dev_ptrs.clear();
    }
}

/// Stops (if needed) and destroys one object.
///
/// # Safety
/// `h` is a handle of kind `k` the soft device gave out.
pub unsafe fn destroy(k: K, h: *mut c_void) {
    // SAFETY: the caller's contract; each call validates its handle regardless.
    unsafe {
        match k {
            K::Devinfo | K::DevinfoRep | K::Conn => {}
            K::Dev => {
                let _ = doca_dev_close(h.cast());
            }
            K::DevRep => {
                let _ = doca_dev_rep_close(h.cast());
            }
            K::Pe => {
                let _ = doca_pe_destroy(h.cast());
            }
            K::Mmap => {
                let _ = doca_mmap_destroy(h.cast());
            }
            K::Inventory => {
                let _ = doca_buf_inventory_destroy(h.cast());
            }
            K::Buf => {
                let mut left = 1u16;
                for _ in 0..=u16::MAX as u32 {
                    if doca_buf_dec_refcount(h.cast(), &mut left) != DOCA_SUCCESS || left == 0 {
                        break;
                    }
                }
            }
            K::Msgq => {
                doca_comch_msgq_stop(h.cast());
                doca_comch_msgq_destroy(h.cast());
            }
            K::Consumer => {
                doca_ctx_stop(h.cast());
                doca_comch_consumer_destroy(h.cast());
            }
            K::Producer => {
                doca_ctx_stop(h.cast());
                doca_comch_producer_destroy(h.cast());
            }
            K::Server => {
                doca_ctx_stop(h.cast());
                doca_comch_server_destroy(h.cast());
            }
            K::Client => {
                doca_ctx_stop(h.cast());
                doca_comch_client_destroy(h.cast());
            }
            K::ConsComp => {
                doca_comch_consumer_completion_stop(h.cast());
                doca_comch_consumer_completion_destroy(h.cast());
            }
            K::Dpa => {
                doca_dpa_stop(h.cast());
                doca_dpa_destroy(h.cast());
            }
            K::Thread => {
                doca_dpa_thread_stop(h.cast());
                doca_dpa_thread_destroy(h.cast());
            }
            K::DpaComp => {
                doca_dpa_completion_stop(h.cast());
                doca_dpa_completion_destroy(h.cast());
            }
            K::Notif => {
                doca_dpa_notification_completion_stop(h.cast());
                doca_dpa_notification_completion_destroy(h.cast());
            }
            K::Affinity => {
                let _ = doca_dpa_eu_affinity_destroy(h.cast());
            }
            K::SendTask | K::RecvTask | K::ComchTask => doca_task_free(h.cast()),
        }
    }
}

/// The calling thread's last failure, as the soft device explains it.
pub fn last_error() -> String {
    let mut buf = [0u8; 512];
    // SAFETY: a writable buffer of its length.
    unsafe { dpakit_soft_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    std::ffi::CStr::from_bytes_until_nul(&buf)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
