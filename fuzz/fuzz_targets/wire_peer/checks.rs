//! What each input must leave behind, checked after its attack: the server let go of the
//! attacker's connection, gave back every descriptor and C API object it took for it, and
//! still serves a well-behaved client.

use crate::program::with;
use crate::rig::{MEM_LEN, Rig, ctx_state, ok};
use crate::support::Bytes;
use dpakit_sys::*;
use std::ptr::null_mut;

impl Rig {
    /// One input: how the program will send, the attack, then the checks.
    pub fn run(&self, data: &[u8]) {
        if !self.warm.replace(true) {
            // The client's first start makes its task pool, which stays: part of the baseline.
            self.witness();
        }
        let (fds, objects) = (open_fds(), live());
        let mut b = Bytes::new(data);
        with(|p| {
            p.probe = (
                usize::from(b.u16()) % (MEM_LEN + 1),
                usize::from(b.u8() % 40),
                b.u8() % 8 != 7,
            )
        });
        self.attack(&mut b);
        // The attacker is gone: the server drops its connection and gives back all it took.
        self.wait(
            "the server did not let go of the attacker's connection",
            || with(|p| p.conns.is_empty() && p.producers.is_empty()),
        );
        let settled = || live() == objects && open_fds() == fds;
        if !self.wait_for(settled) {
            panic!(
                "the server kept what the attacker's connection gave it: {} objects (baseline \
                 {objects}), {} descriptors (baseline {fds}): {:?}",
                live(),
                open_fds(),
                fd_kinds()
            );
        }
        self.witness();
        assert_eq!(live(), objects, "C API objects leaked");
        assert_eq!(open_fds(), fds, "descriptors leaked");
        if std::env::var_os("DPAKIT_FUZZ_STATS").is_some() {
            with(|p| {
                p.stats.inputs += 1;
                eprintln!("wire_peer: {:?}", p.stats);
            });
        }
    }

    /// A well-behaved client: connects, sends a message, gets the echo, stops.
    fn witness(&self) {
        // SAFETY: the rig's client, its connection and a static message.
        unsafe {
            let ctx = doca_comch_client_as_ctx(self.client);
            let rc = doca_ctx_start(ctx);
            assert!(
                rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
                "the well-behaved client does not start ({rc})"
            );
            self.wait("the server did not accept a well-behaved client", || {
                ctx_state(ctx) == DOCA_CTX_STATE_RUNNING
            });
            let mut conn = null_mut();
            ok(
                doca_comch_client_get_connection(self.client, &mut conn),
                "the client's connection",
            );
            let echoes = with(|p| p.echoes);
            let ping = b"are you still there?";
            let mut task = null_mut();
            ok(
                doca_comch_client_task_send_alloc_init(
                    self.client,
                    conn,
                    ping.as_ptr().cast(),
                    ping.len() as u32,
                    &mut task,
                ),
                "the client's send",
            );
            ok(
                doca_task_submit(doca_comch_task_send_as_task(task)),
                "submitting the client's send",
            );
            self.wait("the server did not answer a well-behaved client", || {
                with(|p| p.echoes > echoes)
            });
            let rc = doca_ctx_stop(ctx);
            assert!(
                rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
                "the well-behaved client does not stop ({rc})"
            );
            self.wait("the well-behaved client's connection did not end", || {
                ctx_state(ctx) == DOCA_CTX_STATE_IDLE && with(|p| p.conns.is_empty())
            });
        }
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// What each open descriptor is (for a finding's message).
fn fd_kinds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let to = std::fs::read_link(e.path()).ok()?;
            Some(format!(
                "{}->{}",
                e.file_name().to_string_lossy(),
                to.display()
            ))
        })
        .collect()
}

fn live() -> usize {
    dpakit_emu::fuzzing::live_objects()
}
