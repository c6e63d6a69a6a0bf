//! The server's program, as a DOCA program would write it: its callbacks echo control
//! messages, and record connections and the consumers peers announce; after each progress it
//! sends to each consumer announced from a producer on its connection (started on first use),
//! and stops, then destroys, the producers of connections that went away.

use crate::rig::{MEM_LEN, Rig, ctx_state, ok};
use dpakit_sys::*;
use std::cell::RefCell;
use std::ptr::null_mut;

/// Send tasks of each producer the program starts.
const SEND_TASKS: u32 = 8;

thread_local! {
    static PROGRAM: RefCell<Program> = RefCell::default();
}

/// What the program's callbacks saw, handled after each progress.
#[derive(Default)]
pub struct Program {
    /// Established connections of the server.
    pub conns: Vec<*mut doca_comch_connection>,
    /// Connections that went away, consumers announced: not handled yet.
    gone: Vec<*mut doca_comch_connection>,
    announced: Vec<(*mut doca_comch_connection, u32)>,
    pub producers: Vec<Prod>,
    /// Echoes the well-behaved client received.
    pub echoes: u32,
    /// What the program sends to a consumer it hears of: data bytes, immediate bytes, whether
    /// from a buffer at all.
    pub probe: (usize, usize, bool),
    pub stats: Stats,
}

/// What the run reached so far, printed after each input with `DPAKIT_FUZZ_STATS=1` (replay
/// the corpus with `-runs=0` to see what it covers).
#[derive(Debug, Default)]
pub struct Stats {
    pub inputs: u64,
    /// Connections the server established (the well-behaved client's included).
    established: u64,
    /// Consumers the server accepted, sends that completed and that failed, rings scribbled.
    consumers: u64,
    sends_done: u64,
    sends_failed: u64,
    pub scribbled: u64,
}

/// A producer the program started on a connection.
pub struct Prod {
    conn: *mut doca_comch_connection,
    p: *mut doca_comch_producer,
    stopping: bool,
}

pub fn with<R>(f: impl FnOnce(&mut Program) -> R) -> R {
    PROGRAM.with(|p| f(&mut p.borrow_mut()))
}

impl Rig {
    /// The program's work after a progress: producers of connections that went away are
    /// stopped (and destroyed once IDLE); each consumer announced gets a send.
    pub fn serve(&self) {
        let (gone, announced, probe) = with(|p| {
            (
                std::mem::take(&mut p.gone),
                std::mem::take(&mut p.announced),
                p.probe,
            )
        });
        for conn in &gone {
            let stop: Vec<_> = with(|p| {
                p.conns.retain(|c| c != conn);
                p.producers
                    .iter_mut()
                    .filter(|x| x.conn == *conn && !x.stopping)
                    .map(|x| {
                        x.stopping = true;
                        x.p
                    })
                    .collect()
            });
            for p in stop {
                // SAFETY: a producer of the program; IN_PROGRESS means it ends through
                // progress, anything else that it is IDLE already.
                unsafe { doca_ctx_stop(doca_comch_producer_as_ctx(p)) };
            }
        }
        for (conn, id) in announced {
            if gone.contains(&conn) {
                continue;
            }
            if let Some(p) = self.producer(conn) {
                self.send(p, id, probe);
            }
        }
        let stopped: Vec<_> = with(|p| {
            p.producers
                .iter()
                .filter(|x| x.stopping)
                .map(|x| x.p)
                .collect()
        });
        for p in stopped {
            // SAFETY: a producer of the program.
            let ctx = unsafe { doca_comch_producer_as_ctx(p) };
            if ctx_state(ctx) != DOCA_CTX_STATE_IDLE {
                continue;
            }
            // SAFETY: as above, IDLE.
            if unsafe { doca_comch_producer_destroy(p) } == DOCA_SUCCESS {
                with(|prog| prog.producers.retain(|x| x.p != p));
            }
        }
    }

    /// The program's running producer on `conn`, started if there is none.
    pub fn producer(&self, conn: *mut doca_comch_connection) -> Option<*mut doca_comch_producer> {
        let have = with(|p| {
            p.producers
                .iter()
                .find(|x| x.conn == conn && !x.stopping)
                .map(|x| x.p)
        });
        if have.is_some() {
            return have;
        }
        let mut p = null_mut();
        // SAFETY: a connection handle the server gave (the call checks it is still live) and
        // valid out-parameters.
        unsafe {
            if doca_comch_producer_create(conn, &mut p) != DOCA_SUCCESS {
                return None;
            }
            let ctx = doca_comch_producer_as_ctx(p);
            doca_comch_producer_task_send_set_conf(
                p,
                Some(producer_sent),
                Some(producer_sent),
                SEND_TASKS,
            );
            doca_pe_connect_ctx(self.pe, ctx);
            if doca_ctx_start(ctx) != DOCA_SUCCESS {
                ok(
                    doca_comch_producer_destroy(p),
                    "destroying a producer that did not start",
                );
                return None;
            }
        }
        with(|prog| {
            prog.producers.push(Prod {
                conn,
                p,
                stopping: false,
            })
        });
        Some(p)
    }

    /// Submits a send of `len` bytes (from a buffer, if `with_buf`) and `imm` immediate
    /// bytes to consumer `id`.
    pub fn send(
        &self,
        p: *mut doca_comch_producer,
        id: u32,
        (len, imm, with_buf): (usize, usize, bool),
    ) {
        let imm_bytes = [0x1Du8; 64];
        // SAFETY: the buffer lies in the rig's mmap; the task and buffer are released in the
        // completion callback, or here if they never reach it.
        unsafe {
            let mut buf = null_mut();
            if with_buf
                && doca_buf_inventory_buf_get_by_args(
                    self.inv,
                    self.mmap,
                    self.mem.cast(),
                    MEM_LEN,
                    self.mem.cast(),
                    len.min(MEM_LEN),
                    &mut buf,
                ) != DOCA_SUCCESS
            {
                return;
            }
            let mut task = null_mut();
            let release = |buf: *mut doca_buf| {
                if !buf.is_null() {
                    let mut left = 0u16;
                    doca_buf_dec_refcount(buf, &mut left);
                }
            };
            if doca_comch_producer_task_send_alloc_init(
                p,
                buf,
                imm_bytes.as_ptr().cast_mut(),
                imm.min(imm_bytes.len()) as u32,
                id,
                &mut task,
            ) != DOCA_SUCCESS
            {
                release(buf);
                return;
            }
            let t = doca_comch_producer_task_send_as_task(task);
            if doca_task_submit(t) != DOCA_SUCCESS {
                doca_task_free(t);
                release(buf);
            }
        }
    }

    /// The server's end of the attacking connection, once established.
    pub fn attacked(&self) -> Option<*mut doca_comch_connection> {
        with(|p| p.conns.last().copied())
    }
}

/// A message: the server's program echoes it; the client counts the echo.
pub unsafe extern "C" fn on_message(
    _event: *mut doca_comch_event_msg_recv,
    msg: *mut u8,
    len: u32,
    conn: *mut doca_comch_connection,
) {
    // SAFETY: the live connection of the callback; the message is valid during the callback,
    // copied into memory the task owns until it completes.
    unsafe {
        let server = doca_comch_server_get_server_ctx(conn);
        if server.is_null() {
            with(|p| p.echoes += 1);
            return;
        }
        let copy: Box<Vec<u8>> = Box::new(if len == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(msg, len as usize).to_vec()
        });
        let mut task = null_mut();
        if doca_comch_server_task_send_alloc_init(
            server,
            conn,
            copy.as_ptr().cast(),
            len,
            &mut task,
        ) != DOCA_SUCCESS
        {
            return;
        }
        let t = doca_comch_task_send_as_task(task);
        let raw = Box::into_raw(copy);
        doca_task_set_user_data(t, doca_data { ptr: raw.cast() });
        if doca_task_submit(t) != DOCA_SUCCESS {
            doca_task_free(t);
            drop(Box::from_raw(raw));
        }
    }
}

pub unsafe extern "C" fn server_sent(
    task: *mut doca_comch_task_send,
    task_data: doca_data,
    _ctx: doca_data,
) {
    // SAFETY: the echo's copy, made in `on_message`, freed once; the task is ours again.
    unsafe {
        drop(Box::from_raw(task_data.ptr.cast::<Vec<u8>>()));
        doca_task_free(doca_comch_task_send_as_task(task));
    }
}

pub unsafe extern "C" fn client_sent(task: *mut doca_comch_task_send, _: doca_data, _: doca_data) {
    // SAFETY: the task is ours again.
    unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
}

unsafe extern "C" fn producer_sent(
    task: *mut doca_comch_producer_task_send,
    _: doca_data,
    _: doca_data,
) {
    // SAFETY: the task is ours again, and so is its buffer.
    unsafe {
        let buf = doca_comch_producer_task_send_get_buf(task);
        let t = doca_comch_producer_task_send_as_task(task);
        let done = doca_task_get_status(t) == DOCA_SUCCESS;
        with(|p| match done {
            true => p.stats.sends_done += 1,
            false => p.stats.sends_failed += 1,
        });
        doca_task_free(t);
        if !buf.is_null() {
            let mut left = 0u16;
            doca_buf_dec_refcount(buf.cast_mut(), &mut left);
        }
    }
}

pub unsafe extern "C" fn on_connect(
    _event: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    success: u8,
) {
    if success != 0 {
        with(|p| {
            p.conns.push(conn);
            p.stats.established += 1;
        });
    }
}

pub unsafe extern "C" fn on_disconnect(
    _event: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    _success: u8,
) {
    with(|p| p.gone.push(conn));
}

pub unsafe extern "C" fn on_consumer(
    _event: *mut doca_comch_event_consumer,
    conn: *mut doca_comch_connection,
    id: u32,
) {
    with(|p| {
        p.announced.push((conn, id));
        p.stats.consumers += 1;
    });
}

pub unsafe extern "C" fn on_consumer_expired(
    _event: *mut doca_comch_event_consumer,
    _conn: *mut doca_comch_connection,
    _id: u32,
) {
}
