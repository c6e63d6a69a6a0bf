//! The C types of the DOCA API, under the names bindgen gives them in `dpakit-sys`, so that
//! `dpakit-sys` can check at compile time that every function here has exactly the declared
//! signature. Objects are opaque: C only ever holds their registry handles.
#![allow(non_camel_case_types, missing_docs)]

use core::ffi::{c_int, c_uint, c_void};

pub type doca_error = c_uint;
pub type doca_error_t = doca_error;
pub type doca_ctx_states = c_uint;
pub type doca_pci_func_type = c_uint;
pub type doca_access_flag = c_uint;
pub type doca_task_submit_flag = c_uint;
pub type doca_dpa_dev_log_level = c_uint;
pub type doca_dpa_dev_log_level_t = doca_dpa_dev_log_level;
pub type dpakit_soft_sched_mode = c_uint;
pub type dpakit_soft_exec_mode = c_uint;
pub type dpakit_soft_ending = c_uint;
pub type doca_comm_channel_msg_flags = c_uint;
pub type doca_comm_channel_init_flags = c_uint;

pub type doca_event_handle_t = c_int;
pub type doca_notification_handle_t = doca_event_handle_t;
pub type doca_event_channel_t = doca_event_handle_t;

pub type doca_dpa_dev_t = u64;
pub type doca_dpa_dev_uintptr_t = u64;
pub type doca_dpa_dev_completion_t = u64;
pub type doca_dpa_dev_notification_completion_t = u64;
pub type doca_dpa_dev_comch_consumer_t = u64;
pub type doca_dpa_dev_comch_producer_t = u64;
pub type doca_dpa_dev_comch_consumer_completion_t = u64;
pub type doca_dpa_dev_mmap_t = u32;
pub type doca_dpa_dev_sync_event_t = u64;
pub type doca_dpa_dev_sync_event_remote_net_t = u64;
pub type doca_gpu_dev_sync_event_t = u64;
pub type doca_dpa_dev_rdma_t = u64;
pub type doca_dpa_dev_rdma_srq_t = u64;
pub type doca_rdma_transport_type = c_uint;
pub type doca_rdma_srq_type = c_uint;

/// `union doca_data`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union doca_data {
    pub ptr: *mut c_void,
    pub u64_: u64,
}

impl doca_data {
    /// The 64 bits, whichever member was written.
    pub fn bits(self) -> u64 {
        // SAFETY: both members are 8 plain bytes; every bit pattern is a valid u64.
        unsafe { self.u64_ }
    }

    /// User data holding `bits`.
    pub fn from_bits(bits: u64) -> Self {
        doca_data { u64_: bits }
    }
}

impl Default for doca_data {
    fn default() -> Self {
        doca_data::from_bits(0)
    }
}

impl core::fmt::Debug for doca_data {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "doca_data({:#x})", self.bits())
    }
}

macro_rules! opaque {
    ($($name:ident),* $(,)?) => { $(
        #[repr(C)]
        #[derive(Debug)]
        pub struct $name {
            _unused: [u8; 0],
        }
    )* };
}

opaque!(
    doca_clock,
    doca_devinfo,
    doca_devinfo_rep,
    doca_dev,
    doca_dev_rep,
    doca_pe,
    doca_ctx,
    doca_task,
    doca_mmap,
    doca_buf,
    doca_buf_inventory,
    doca_buf_pool,
    doca_comch_msgq,
    doca_comch_consumer,
    doca_comch_producer,
    doca_comch_consumer_task_post_recv,
    doca_comch_consumer_completion,
    doca_comch_producer_task_send,
    doca_comch_server,
    doca_comch_client,
    doca_comch_connection,
    doca_comch_task_send,
    doca_comch_event_msg_recv,
    doca_comch_event_connection_status_changed,
    doca_comch_event_consumer,
    doca_dpa,
    doca_dpa_thread,
    doca_dpa_completion,
    doca_dpa_notification_completion,
    doca_dpa_eu_affinity,
    doca_sync_event,
    doca_sync_event_remote_net,
    doca_sync_event_task_get,
    doca_sync_event_task_notify_set,
    doca_sync_event_task_notify_add,
    doca_sync_event_task_wait_eq,
    doca_sync_event_task_wait_neq,
    doca_gpu,
    doca_rdma,
    doca_rdma_connection,
    doca_rdma_srq,
    doca_dma,
    doca_dma_task_memcpy,
    doca_comm_channel_ep_t,
    doca_comm_channel_addr_t,
);

/// A task completion callback of `$task` (every DOCA task type has one of this shape).
macro_rules! task_cb {
    ($($name:ident => $task:ident),* $(,)?) => { $(
        pub type $name = Option<
            unsafe extern "C" fn(task: *mut $task, task_user_data: doca_data, ctx_user_data: doca_data),
        >;
    )* };
}

task_cb!(
    doca_sync_event_task_get_completion_cb_t => doca_sync_event_task_get,
    doca_sync_event_task_notify_set_completion_cb_t => doca_sync_event_task_notify_set,
    doca_sync_event_task_notify_add_completion_cb_t => doca_sync_event_task_notify_add,
    doca_sync_event_task_wait_eq_completion_cb_t => doca_sync_event_task_wait_eq,
    doca_sync_event_task_wait_neq_completion_cb_t => doca_sync_event_task_wait_neq,
    doca_dma_task_memcpy_completion_cb_t => doca_dma_task_memcpy,
);

/// On the soft device an app is its descriptor (`dpakit_soft.h`).
pub type doca_dpa_app = dpakit_abi::kernel::SoftApp;

pub type doca_dpa_func_t = Option<unsafe extern "C" fn()>;

pub type doca_ctx_state_changed_callback_t = Option<
    unsafe extern "C" fn(
        user_data: doca_data,
        ctx: *mut doca_ctx,
        prev_state: doca_ctx_states,
        next_state: doca_ctx_states,
    ),
>;

pub type doca_task_completion_cb_t = Option<
    unsafe extern "C" fn(task: *mut doca_task, task_user_data: doca_data, ctx_user_data: doca_data),
>;

pub type doca_comch_consumer_task_post_recv_completion_cb_t = Option<
    unsafe extern "C" fn(
        task: *mut doca_comch_consumer_task_post_recv,
        task_user_data: doca_data,
        ctx_user_data: doca_data,
    ),
>;

pub type doca_comch_producer_task_send_completion_cb_t = Option<
    unsafe extern "C" fn(
        task: *mut doca_comch_producer_task_send,
        task_user_data: doca_data,
        ctx_user_data: doca_data,
    ),
>;

pub type doca_comch_task_send_completion_cb_t = Option<
    unsafe extern "C" fn(
        task: *mut doca_comch_task_send,
        task_user_data: doca_data,
        ctx_user_data: doca_data,
    ),
>;

pub type doca_comch_event_msg_recv_cb_t = Option<
    unsafe extern "C" fn(
        event: *mut doca_comch_event_msg_recv,
        recv_buffer: *mut u8,
        msg_len: u32,
        comch_connection: *mut doca_comch_connection,
    ),
>;

pub type doca_comch_event_connection_status_changed_cb_t = Option<
    unsafe extern "C" fn(
        event: *mut doca_comch_event_connection_status_changed,
        comch_connection: *mut doca_comch_connection,
        change_successful: u8,
    ),
>;

pub type doca_comch_event_consumer_cb_t = Option<
    unsafe extern "C" fn(
        event: *mut doca_comch_event_consumer,
        comch_connection: *mut doca_comch_connection,
        id: u32,
    ),
>;

pub type doca_comch_counter = c_uint;

/// `struct dpakit_soft_trace_event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct dpakit_soft_trace_event {
    pub thread: u32,
    pub ending: u32,
    pub activation: u64,
}

/// `struct dpakit_soft_dpa_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct dpakit_soft_dpa_stats {
    pub activations: u64,
    pub workers: u32,
    pub reserved: u32,
}

/// `struct dpakit_soft_isa_profile`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct dpakit_soft_isa_profile {
    pub activations: u64,
    pub instructions: u64,
    pub max_instructions: u64,
    pub device_calls: u64,
}

pub const DOCA_CTX_STATE_IDLE: doca_ctx_states = 0;
pub const DOCA_CTX_STATE_STARTING: doca_ctx_states = 1;
pub const DOCA_CTX_STATE_RUNNING: doca_ctx_states = 2;
pub const DOCA_CTX_STATE_STOPPING: doca_ctx_states = 3;

/// `struct doca_comm_channel_init_attr` (DOCA 1.2/1.3).
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct doca_comm_channel_init_attr {
    pub cookie: u32,
    pub flags: u32,
    pub maxmsgs: u32,
    pub msgsize: u32,
}

/// `union doca_clock_timespec_t`: a timespec, or a cycle count.
#[repr(C)]
#[derive(Clone, Copy)]
pub union doca_clock_timespec_t {
    pub ts: libc::timespec,
    pub counter: u64,
}

impl std::fmt::Debug for doca_clock_timespec_t {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: every bit pattern is a valid u64; which member is meant, only the clock type
        // says.
        let raw = unsafe { self.counter };
        f.debug_struct("doca_clock_timespec_t")
            .field("first_word", &raw)
            .finish_non_exhaustive()
    }
}
