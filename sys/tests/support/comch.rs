//! What the Comch C API tests share: the soft device's diagnostics, an assertion on return
//! codes, tables of calls that must all be refused, a runtime directory per test binary,
//! devices, contexts, progress, the control path's callbacks and configured servers and clients.
#![allow(dead_code, unused_macros)]

use dpakit_sys::*;
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, c_void};
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const ARM: &CStr = c"03:00.0";
pub const HOST: &CStr = c"b1:00.0";

/// Asserts a call returns `code`, showing the soft device's explanation otherwise.
macro_rules! expect {
    ($call:expr, $code:expr) => {{
        // SAFETY: the point of these tests: C calls with whatever arguments, which the soft
        // device must survive.
        let got = unsafe { $call };
        assert_eq!(
            got,
            $code,
            "{} returned {:?} ({})",
            stringify!($call),
            got,
            last_error()
        );
    }};
}

/// A [`Row`] calling a function of the C API through `unsafe`, optionally with a part its
/// explanation must mention: `row!(doca_comch_server_destroy(null_mut()))`,
/// `row!(doca_comch_consumer_create(conn, null_mut(), &mut null_mut()), "buf_mmap is NULL")`.
/// The arguments are evaluated at each call, in the test's scope.
macro_rules! row {
    ($f:ident($($arg:expr),* $(,)?) $(, $explains:expr)? $(,)?) => {
        Row {
            name: stringify!($f),
            args: stringify!($($arg),*),
            explains: row!(@explains $($explains)?),
            call: Box::new(|| {
                // SAFETY: the point of these tables: C calls with NULL, destroyed or stray
                // arguments, which the soft device must survive.
                Answer::from(unsafe { $f($($arg),*) })
            }),
        }
    };
    (@explains) => { "" };
    (@explains $explains:expr) => { $explains };
}

/// What a call of a table answered: a DOCA error code, or the pointer (or user data) of a
/// function with no code to return, which refuses by answering NULL.
#[derive(Debug)]
pub enum Answer {
    Code(doca_error_t),
    Ptr(*const c_void),
}

impl From<doca_error_t> for Answer {
    fn from(code: doca_error_t) -> Answer {
        Answer::Code(code)
    }
}

impl<T> From<*mut T> for Answer {
    fn from(p: *mut T) -> Answer {
        Answer::Ptr(p.cast_const().cast())
    }
}

impl<T> From<*const T> for Answer {
    fn from(p: *const T) -> Answer {
        Answer::Ptr(p.cast())
    }
}

impl From<doca_data> for Answer {
    fn from(data: doca_data) -> Answer {
        // SAFETY: both members are 64 bits of plain data; zeroed user data is a NULL pointer.
        Answer::Ptr(unsafe { data.ptr }.cast_const())
    }
}

/// One row of a table of refused calls: the function, its arguments as written, a part of the
/// explanation its refusal must give ("" for any) and the call.
pub struct Row<'a> {
    pub name: &'static str,
    pub args: &'static str,
    pub explains: &'static str,
    pub call: Box<dyn Fn() -> Answer + 'a>,
}

/// Calls the rows in order: each must answer `code` (NULL, for a function that answers a
/// pointer) and give its explanation. A failure names the function and its arguments.
#[track_caller]
pub fn expect_refused<'a>(code: doca_error_t, rows: impl IntoIterator<Item = Row<'a>>) {
    for row in rows {
        let got = (row.call)();
        let why = last_error();
        let (name, args) = (row.name, row.args);
        match got {
            Answer::Code(got) => assert!(
                got == code,
                "{name}({args}) returned {}, expected {} ({why})",
                error_name(got),
                error_name(code)
            ),
            Answer::Ptr(got) => assert!(
                got.is_null(),
                "{name}({args}) answered {got:?}, expected NULL ({why})"
            ),
        }
        assert!(
            why.contains(row.explains),
            "{name}({args}): expected `{}` in: {why}",
            row.explains
        );
    }
}

/// `DOCA_ERROR_INVALID_VALUE` for 6.
pub fn error_name(code: doca_error_t) -> String {
    // SAFETY: answers a static NUL-terminated name for any value.
    let name = unsafe { CStr::from_ptr(doca_error_get_name(code)) };
    format!("{} ({code})", name.to_string_lossy())
}

/// The explanation of the calling thread's last failed call.
pub fn last_error() -> String {
    let mut buf = [0u8; 512];
    // SAFETY: a writable buffer of its length.
    unsafe { dpakit_soft_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    CStr::from_bytes_until_nul(&buf)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Asserts the last failed call's explanation mentions `part`.
#[track_caller]
pub fn explained(part: &str) {
    let e = last_error();
    assert!(e.contains(part), "expected `{part}` in: {e}");
}

/// Points the soft device at a runtime directory of this process. Every test calls it first.
pub fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "dpakit-{}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        // SAFETY: every test calls this before it touches the soft device, and the OnceLock
        // holds the other tests back until the variable is set: no thread reads the
        // environment meanwhile.
        unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", dir) };
    });
}

pub fn open_dev(pci: &CStr) -> *mut doca_dev {
    let mut list = null_mut();
    let mut n = 0;
    expect!(doca_devinfo_create_list(&mut list, &mut n), DOCA_SUCCESS);
    let mut dev = null_mut();
    for i in 0..n as usize {
        // SAFETY: `list` holds `n` devinfos.
        let info = unsafe { *list.add(i) };
        let mut equal = 0;
        expect!(
            doca_devinfo_is_equal_pci_addr(info, pci.as_ptr(), &mut equal),
            DOCA_SUCCESS
        );
        if equal != 0 {
            expect!(doca_dev_open(info, &mut dev), DOCA_SUCCESS);
        }
    }
    expect!(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
    assert!(!dev.is_null(), "{pci:?} is in the default topology");
    dev
}

/// The representor of the host PF, on the Arm device.
pub fn open_rep(arm: *mut doca_dev) -> *mut doca_dev_rep {
    let mut list = null_mut();
    let mut n = 0;
    expect!(
        doca_devinfo_rep_create_list(arm, DOCA_DEVINFO_REP_FILTER_NET as i32, &mut list, &mut n),
        DOCA_SUCCESS
    );
    let mut rep = null_mut();
    for i in 0..n as usize {
        // SAFETY: `list` holds `n` representor devinfos.
        let info = unsafe { *list.add(i) };
        let mut equal = 0;
        expect!(
            doca_devinfo_rep_is_equal_pci_addr(info, HOST.as_ptr(), &mut equal),
            DOCA_SUCCESS
        );
        if equal != 0 {
            expect!(doca_dev_rep_open(info, &mut rep), DOCA_SUCCESS);
        }
    }
    expect!(doca_devinfo_rep_destroy_list(list), DOCA_SUCCESS);
    assert!(!rep.is_null(), "the Arm device represents the host PF");
    rep
}

/// The host PF, the Arm device and its representor of the host PF: both sides of one
/// BlueField, as a Comch or Comm Channel test opens them.
pub struct Devices {
    pub arm: *mut doca_dev,
    pub rep: *mut doca_dev_rep,
    pub host: *mut doca_dev,
}

impl Devices {
    pub fn open() -> Devices {
        let arm = open_dev(ARM);
        let rep = open_rep(arm);
        let host = open_dev(HOST);
        Devices { arm, rep, host }
    }

    /// Closes them (each close must succeed: nothing may still hold them).
    #[track_caller]
    pub fn close(self) {
        expect!(doca_dev_close(self.host), DOCA_SUCCESS);
        expect!(doca_dev_rep_close(self.rep), DOCA_SUCCESS);
        expect!(doca_dev_close(self.arm), DOCA_SUCCESS);
    }
}

pub fn new_pe() -> *mut doca_pe {
    let mut pe = null_mut();
    expect!(doca_pe_create(&mut pe), DOCA_SUCCESS);
    pe
}

pub fn server_ctx(server: *mut doca_comch_server) -> *mut doca_ctx {
    // SAFETY: a live server.
    unsafe { doca_comch_server_as_ctx(server) }
}

pub fn client_ctx(client: *mut doca_comch_client) -> *mut doca_ctx {
    // SAFETY: a live client.
    unsafe { doca_comch_client_as_ctx(client) }
}

#[track_caller]
pub fn state(ctx: *mut doca_ctx) -> doca_ctx_states {
    let mut s = 0;
    expect!(doca_ctx_get_state(ctx, &mut s), DOCA_SUCCESS);
    s
}

/// Progresses `pes` until `done()` holds (at most 10 s).
#[track_caller]
pub fn progress_until(pes: &[*mut doca_pe], mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        for &pe in pes {
            // SAFETY: live PEs.
            unsafe { doca_pe_progress(pe) };
        }
        assert!(Instant::now() < deadline, "timed out");
    }
}

/// Stops a context, progressing `pe` until it is IDLE.
#[track_caller]
pub fn stop(ctx: *mut doca_ctx, pe: *mut doca_pe) {
    // SAFETY: a live context.
    let rc = unsafe { doca_ctx_stop(ctx) };
    assert!(
        rc == DOCA_SUCCESS || rc == DOCA_ERROR_IN_PROGRESS,
        "{rc}: {}",
        last_error()
    );
    progress_until(&[pe], || state(ctx) == DOCA_CTX_STATE_IDLE);
}

// ---------------------------------------------------------------------------------------------
// The control path's callbacks, servers and clients
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// The connections the servers of this thread's test accepted.
    pub static ACCEPTED: RefCell<Vec<*mut doca_comch_connection>> = const { RefCell::new(Vec::new()) };
    /// What `disconnected` calls with the closing connection, if a test set it.
    pub static ON_DISCONNECT: Cell<Option<fn(*mut doca_comch_connection)>> = const { Cell::new(None) };
}

pub unsafe extern "C" fn sent(task: *mut doca_comch_task_send, _: doca_data, _: doca_data) {
    // SAFETY: a completed task, freed once.
    unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
}

pub unsafe extern "C" fn received(
    _: *mut doca_comch_event_msg_recv,
    _: *mut u8,
    _: u32,
    _: *mut doca_comch_connection,
) {
}

pub unsafe extern "C" fn connected(
    _: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    ok: u8,
) {
    if ok != 0 {
        ACCEPTED.with(|a| a.borrow_mut().push(conn));
    }
}

pub unsafe extern "C" fn disconnected(
    _: *mut doca_comch_event_connection_status_changed,
    conn: *mut doca_comch_connection,
    _: u8,
) {
    ACCEPTED.with(|a| a.borrow_mut().retain(|&c| c != conn));
    if let Some(probe) = ON_DISCONNECT.with(Cell::get) {
        probe(conn);
    }
}

pub unsafe extern "C" fn consumer_event(
    _: *mut doca_comch_event_consumer,
    _: *mut doca_comch_connection,
    _: u32,
) {
}

/// A server with everything a start needs but a PE.
pub fn configured_server(
    arm: *mut doca_dev,
    rep: *mut doca_dev_rep,
    name: &CStr,
) -> *mut doca_comch_server {
    let mut server = null_mut();
    expect!(
        doca_comch_server_create(arm, rep, name.as_ptr(), &mut server),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_server_task_send_set_conf(server, Some(sent), Some(sent), 8),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_server_event_msg_recv_register(server, Some(received)),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_server_event_connection_status_changed_register(
            server,
            Some(connected),
            Some(disconnected)
        ),
        DOCA_SUCCESS
    );
    server
}

/// A client with everything a start needs but a PE.
pub fn configured_client(host: *mut doca_dev, name: &CStr) -> *mut doca_comch_client {
    let mut client = null_mut();
    expect!(
        doca_comch_client_create(host, name.as_ptr(), &mut client),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_client_task_send_set_conf(client, Some(sent), Some(sent), 8),
        DOCA_SUCCESS
    );
    expect!(
        doca_comch_client_event_msg_recv_register(client, Some(received)),
        DOCA_SUCCESS
    );
    client
}

pub fn started_server(
    arm: *mut doca_dev,
    rep: *mut doca_dev_rep,
    name: &CStr,
    pe: *mut doca_pe,
) -> *mut doca_comch_server {
    let server = configured_server(arm, rep, name);
    expect!(doca_pe_connect_ctx(pe, server_ctx(server)), DOCA_SUCCESS);
    expect!(doca_ctx_start(server_ctx(server)), DOCA_SUCCESS);
    server
}

pub fn stop_and_destroy_server(server: *mut doca_comch_server, pe: *mut doca_pe) {
    stop(server_ctx(server), pe);
    expect!(doca_comch_server_destroy(server), DOCA_SUCCESS);
}
