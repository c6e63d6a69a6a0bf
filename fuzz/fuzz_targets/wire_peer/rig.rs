//! The rig: one Comch server for the whole run (with its program's callbacks registered), the
//! well-behaved client, the producers' memory, and the descriptors some attacks pass; and
//! progressing it all.

use crate::program::{
    client_sent, on_connect, on_consumer, on_consumer_expired, on_disconnect, on_message,
    server_sent,
};
use crate::support::runtime_dir;
use crate::{HOST, NAME};
use dpakit_sys::*;
use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

/// How long the server may take to drop the attacker, give back what it took, or serve the
/// well-behaved client; past it the input is a hang.
const PROMPT: Duration = Duration::from_secs(2);
/// The producers' memory (what they send from).
pub const MEM_LEN: usize = 64 << 10;

/// The server, the well-behaved client (IDLE between inputs), the producers' memory, and the
/// descriptors some attacks pass (kept for the run).
pub struct Rig {
    pub pe: *mut doca_pe,
    pub client: *mut doca_comch_client,
    pub mmap: *mut doca_mmap,
    pub inv: *mut doca_buf_inventory,
    pub mem: *mut u8,
    pub path: PathBuf,
    pub null: OwnedFd,
    pub file: OwnedFd,
    pub dir: OwnedFd,
    /// Whether the client started once.
    pub warm: std::cell::Cell<bool>,
}

pub fn ok(rc: doca_error_t, what: &str) {
    assert_eq!(rc, DOCA_SUCCESS, "{what} failed");
}

/// The device whose PCI address is `pci`.
unsafe fn open_dev(pci: &CStr) -> *mut doca_dev {
    // SAFETY: valid out-parameters and strings; the list stays alive for the run.
    unsafe {
        let (mut list, mut n) = (null_mut(), 0u32);
        ok(doca_devinfo_create_list(&mut list, &mut n), "devinfo list");
        for i in 0..n as usize {
            let mut equal = 0u8;
            doca_devinfo_is_equal_pci_addr(*list.add(i), pci.as_ptr(), &mut equal);
            let mut dev = null_mut();
            if equal != 0 && doca_dev_open(*list.add(i), &mut dev) == DOCA_SUCCESS {
                return dev;
            }
        }
        panic!("no device {pci:?}");
    }
}

/// The Arm device's representor of the host function.
unsafe fn open_rep(arm: *mut doca_dev) -> *mut doca_dev_rep {
    // SAFETY: valid out-parameters and strings; the list stays alive for the run.
    unsafe {
        let (mut list, mut n) = (null_mut(), 0u32);
        ok(
            doca_devinfo_rep_create_list(
                arm,
                DOCA_DEVINFO_REP_FILTER_NET as i32,
                &mut list,
                &mut n,
            ),
            "representor list",
        );
        for i in 0..n as usize {
            let mut equal = 0u8;
            doca_devinfo_rep_is_equal_pci_addr(*list.add(i), c"b1:00.0".as_ptr(), &mut equal);
            let mut rep = null_mut();
            if equal != 0 && doca_dev_rep_open(*list.add(i), &mut rep) == DOCA_SUCCESS {
                return rep;
            }
        }
        panic!("no representor of the host function");
    }
}

pub fn ctx_state(ctx: *mut doca_ctx) -> doca_ctx_states {
    let mut state = DOCA_CTX_STATE_IDLE;
    // SAFETY: a live context (or any handle: the call checks) and a valid out-parameter.
    unsafe { doca_ctx_get_state(ctx, &mut state) };
    state
}

impl Rig {
    pub fn new() -> Rig {
        // SAFETY: the setup of a server, a client, an mmap and an inventory, with valid
        // out-parameters and strings; the memory is leaked, so it outlives the mmap.
        unsafe {
            let arm = open_dev(c"03:00.0");
            let host = open_dev(c"b1:00.0");
            let rep = open_rep(arm);
            let mut pe = null_mut();
            ok(doca_pe_create(&mut pe), "doca_pe_create");
            let mut server = null_mut();
            ok(
                doca_comch_server_create(arm, rep, NAME.as_ptr(), &mut server),
                "doca_comch_server_create",
            );
            ok(
                doca_comch_server_task_send_set_conf(
                    server,
                    Some(server_sent),
                    Some(server_sent),
                    256,
                ),
                "server send tasks",
            );
            ok(
                doca_comch_server_event_msg_recv_register(server, Some(on_message)),
                "server receive callback",
            );
            ok(
                doca_comch_server_event_connection_status_changed_register(
                    server,
                    Some(on_connect),
                    Some(on_disconnect),
                ),
                "server connection callbacks",
            );
            ok(
                doca_comch_server_event_consumer_register(
                    server,
                    Some(on_consumer),
                    Some(on_consumer_expired),
                ),
                "server consumer callbacks",
            );
            let ctx = doca_comch_server_as_ctx(server);
            ok(doca_pe_connect_ctx(pe, ctx), "connect the server");
            ok(doca_ctx_start(ctx), "start the server");
            let mut client = null_mut();
            ok(
                doca_comch_client_create(host, NAME.as_ptr(), &mut client),
                "doca_comch_client_create",
            );
            ok(
                doca_comch_client_task_send_set_conf(
                    client,
                    Some(client_sent),
                    Some(client_sent),
                    4,
                ),
                "client send tasks",
            );
            ok(
                doca_comch_client_event_msg_recv_register(client, Some(on_message)),
                "client receive callback",
            );
            ok(
                doca_pe_connect_ctx(pe, doca_comch_client_as_ctx(client)),
                "connect the client",
            );
            let mem = Box::leak(vec![0xA5u8; MEM_LEN].into_boxed_slice()).as_mut_ptr();
            let mut mmap = null_mut();
            ok(doca_mmap_create(&mut mmap), "doca_mmap_create");
            ok(
                doca_mmap_set_memrange(mmap, mem.cast(), MEM_LEN),
                "mmap range",
            );
            ok(
                doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE),
                "mmap permissions",
            );
            ok(doca_mmap_add_dev(mmap, arm), "mmap device");
            ok(doca_mmap_start(mmap), "mmap start");
            let mut inv = null_mut();
            ok(doca_buf_inventory_create(64, &mut inv), "inventory");
            ok(doca_buf_inventory_start(inv), "inventory start");
            let path = dpakit_wire::fuzzing::comch_server_path(HOST, "wire-peer")
                .expect("the server's socket path");
            let dir = runtime_dir();
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.join("regular-file"))
                .expect("a regular file");
            file.set_len(1 << 20).expect("sizing the regular file");
            Rig {
                pe,
                client,
                mmap,
                inv,
                mem,
                path,
                null: std::fs::File::open("/dev/null").expect("/dev/null").into(),
                file: file.into(),
                dir: std::fs::File::open(&dir)
                    .expect("the runtime directory")
                    .into(),
                warm: std::cell::Cell::new(false),
            }
        }
    }

    /// One progress of the PE, then what the program does outside callbacks.
    pub fn pass(&self) {
        // SAFETY: the rig's PE.
        unsafe { doca_pe_progress(self.pe) };
        self.serve();
    }

    /// Progresses until `done`; a finding if that takes longer than [`PROMPT`].
    pub fn wait(&self, what: &str, done: impl FnMut() -> bool) {
        if !self.wait_for(done) {
            panic!("{what} within {PROMPT:?}");
        }
    }

    /// Progresses until `done` (true), or for [`PROMPT`] (false).
    pub fn wait_for(&self, mut done: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        loop {
            self.pass();
            if done() {
                return true;
            }
            if start.elapsed() > PROMPT {
                return false;
            }
        }
    }
}
