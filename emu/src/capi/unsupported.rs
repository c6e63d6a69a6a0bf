//! What programs' shared helper files call and the soft device does not model: RDMA
//! (`doca_rdma.h`), extending a DPA context to another device, mmap exports between processes
//! and peers, and the parts of sync events beyond CPU, DPA and remote PCI locations (remote
//! network peers, GPUs).
//!
//! Every function exists, so such programs compile and link. Creating an object answers
//! `DOCA_ERROR_NOT_SUPPORTED` with a message naming the library; capability queries answer that
//! it is not supported; calls on an object that can never exist refuse the handle, as for any
//! handle the soft device did not create. Arguments are still validated first (NULL, destroyed
//! and foreign handles get their usual `INVALID_VALUE`).

use super::registry;
use super::sync_event::event;
use super::types::*;
use super::{call, call_value, dev};
use crate::error::{Error, ErrorCode, Result, err};
use std::ffi::c_void;

/// `NOT_SUPPORTED`: `lib` is not modelled.
fn not_modelled(lib: &str, what: &str) -> Error {
    err(
        ErrorCode::NotSupported,
        format!("{lib} is not modelled by the soft device: {what}"),
    )
}

/// A `struct doca_<ty>` handle: none can exist, since the soft device never creates one.
fn no_such(ptr: *const c_void, param: &str, ty: &str, lib: &str, create: &str) -> Error {
    if ptr.is_null() {
        return err(
            ErrorCode::InvalidValue,
            format!("{param} is NULL: pass a struct {ty}"),
        );
    }
    let what = match registry::lookup(ptr) {
        registry::Lookup::Live(kind) => format!("a {}", kind.c_name()),
        _ => "not an object of the soft device".to_string(),
    };
    err(
        ErrorCode::InvalidValue,
        format!(
            "{param} ({ptr:p}) is {what}, not a struct {ty}: {lib} is not modelled by the soft \
             device, and {create} answers DOCA_ERROR_NOT_SUPPORTED"
        ),
    )
}

/// Validates the device, then answers that `lib` is not modelled.
fn create_on(dev: *const doca_dev, lib: &str, what: &str) -> Result<()> {
    dev::dev(dev, "dev")?;
    Err(not_modelled(lib, what))
}

/// Validates the devinfo, then answers that the capability is not supported.
fn cap(devinfo: *const doca_devinfo, lib: &str) -> Result<()> {
    dev::devinfo(devinfo, "devinfo")?;
    Err(not_modelled(
        lib,
        "no device of the soft device has this capability",
    ))
}

/// Declares API functions returning `doca_error_t` whose body is an expression over their
/// arguments.
macro_rules! api {
    ($( fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:expr; )*) => {$(
        #[doc = concat!("`", stringify!($name), "`: not modelled by the soft device.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> doca_error_t {
            $( let _ = &$arg; )*
            call(stringify!($name), || $body)
        }
    )*};
}

/// Declares API functions returning a pointer: NULL, and the reason recorded.
macro_rules! api_ptr {
    ($( fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => $body:expr; )*) => {$(
        #[doc = concat!("`", stringify!($name), "`: NULL, not modelled by the soft device.")]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            $( let _ = &$arg; )*
            call_value(stringify!($name), std::ptr::null_mut(), || $body)
        }
    )*};
}

// ---- doca_rdma ----

const RDMA: &str = "doca_rdma";

fn rdma(ptr: *const doca_rdma) -> Error {
    no_such(ptr.cast(), "rdma", "doca_rdma", RDMA, "doca_rdma_create")
}

fn srq(ptr: *const doca_rdma_srq) -> Error {
    no_such(
        ptr.cast(),
        "rdma_srq",
        "doca_rdma_srq",
        RDMA,
        "doca_rdma_srq_create",
    )
}

api! {
    fn doca_rdma_create(dev: *mut doca_dev, rdma: *mut *mut doca_rdma)
        => create_on(dev, RDMA, "doca_rdma_create cannot create an RDMA context");
    fn doca_rdma_create_with_srq(
        dev: *mut doca_dev,
        rdma_srq: *mut doca_rdma_srq,
        rdma: *mut *mut doca_rdma,
    ) => create_on(dev, RDMA, "doca_rdma_create_with_srq cannot create an RDMA context");
    fn doca_rdma_destroy(rdma: *mut doca_rdma) => Err(self::rdma(rdma));
    fn doca_rdma_export(
        rdma: *mut doca_rdma,
        local_rdma_conn_details: *mut *const c_void,
        local_rdma_conn_details_size: *mut usize,
        rdma_connection: *mut *mut doca_rdma_connection,
    ) => Err(self::rdma(rdma));
    fn doca_rdma_connect(
        rdma: *mut doca_rdma,
        remote_rdma_conn_details: *const c_void,
        remote_rdma_conn_details_size: usize,
        rdma_connection: *mut doca_rdma_connection,
    ) => Err(self::rdma(rdma));
    fn doca_rdma_set_permissions(rdma: *mut doca_rdma, permissions: u32) => Err(self::rdma(rdma));
    fn doca_rdma_set_grh_enabled(rdma: *mut doca_rdma, grh_enabled: u8) => Err(self::rdma(rdma));
    fn doca_rdma_set_gid_index(rdma: *mut doca_rdma, gid_index: u32) => Err(self::rdma(rdma));
    fn doca_rdma_set_send_queue_size(rdma: *mut doca_rdma, send_queue_size: u32)
        => Err(self::rdma(rdma));
    fn doca_rdma_set_recv_queue_size(rdma: *mut doca_rdma, recv_queue_size: u32)
        => Err(self::rdma(rdma));
    fn doca_rdma_set_transport_type(rdma: *mut doca_rdma, transport_type: doca_rdma_transport_type)
        => Err(self::rdma(rdma));
    fn doca_rdma_set_max_num_connections(rdma: *mut doca_rdma, max_num_connections: u16)
        => Err(self::rdma(rdma));
    fn doca_rdma_get_dpa_handle(rdma: *mut doca_rdma, dpa_rdma: *mut doca_dpa_dev_rdma_t)
        => Err(self::rdma(rdma));
    fn doca_rdma_dpa_completion_attach(rdma: *mut doca_rdma, dpa_comp: *mut doca_dpa_completion)
        => Err(self::rdma(rdma));
    fn doca_rdma_task_receive_set_dst_buf_list_len(rdma: *mut doca_rdma, buf_list_len: u32)
        => Err(self::rdma(rdma));
    fn doca_rdma_connection_get_id(
        rdma_connection: *const doca_rdma_connection,
        connection_id: *mut u32,
    ) => Err(no_such(
        rdma_connection.cast(),
        "rdma_connection",
        "doca_rdma_connection",
        RDMA,
        "doca_rdma_export",
    ));
    fn doca_rdma_cap_get_max_recv_queue_size(
        devinfo: *const doca_devinfo,
        max_recv_queue_size: *mut u32,
    ) => cap(devinfo, RDMA);
    fn doca_rdma_cap_get_max_send_queue_size(
        devinfo: *const doca_devinfo,
        max_send_queue_size: *mut u32,
    ) => cap(devinfo, RDMA);
    fn doca_rdma_cap_get_max_message_size(devinfo: *const doca_devinfo, max_message_size: *mut u32)
        => cap(devinfo, RDMA);
    fn doca_rdma_cap_transport_type_is_supported(
        devinfo: *const doca_devinfo,
        transport_type: doca_rdma_transport_type,
    ) => cap(devinfo, RDMA);
    fn doca_rdma_cap_task_receive_is_supported(devinfo: *const doca_devinfo) => cap(devinfo, RDMA);
    fn doca_rdma_cap_task_send_is_supported(devinfo: *const doca_devinfo) => cap(devinfo, RDMA);
    fn doca_rdma_cap_task_send_imm_is_supported(devinfo: *const doca_devinfo) => cap(devinfo, RDMA);
    fn doca_rdma_cap_task_read_is_supported(devinfo: *const doca_devinfo) => cap(devinfo, RDMA);
    fn doca_rdma_cap_task_write_is_supported(devinfo: *const doca_devinfo) => cap(devinfo, RDMA);
    fn doca_rdma_srq_create(dev: *mut doca_dev, rdma_srq: *mut *mut doca_rdma_srq)
        => create_on(dev, RDMA, "doca_rdma_srq_create cannot create a shared receive queue");
    fn doca_rdma_srq_destroy(rdma_srq: *mut doca_rdma_srq) => Err(srq(rdma_srq));
    fn doca_rdma_srq_set_shared_recv_queue_size(rdma_srq: *mut doca_rdma_srq, size: u32)
        => Err(srq(rdma_srq));
    fn doca_rdma_srq_task_receive_set_dst_buf_list_len(rdma_srq: *mut doca_rdma_srq, len: u32)
        => Err(srq(rdma_srq));
    fn doca_rdma_srq_set_type(rdma_srq: *mut doca_rdma_srq, srq_type: doca_rdma_srq_type)
        => Err(srq(rdma_srq));
    fn doca_rdma_srq_get_dpa_handle(
        rdma_srq: *mut doca_rdma_srq,
        dpa_rdma_srq: *mut doca_dpa_dev_rdma_srq_t,
    ) => Err(srq(rdma_srq));
}

api_ptr! {
    fn doca_rdma_as_ctx(rdma: *mut doca_rdma) -> *mut doca_ctx => Err(self::rdma(rdma));
    fn doca_rdma_srq_as_ctx(rdma_srq: *mut doca_rdma_srq) -> *mut doca_ctx => Err(srq(rdma_srq));
}

// ---- doca_dpa: contexts extended to other devices ----

api! {
    fn doca_dpa_device_extend(
        dpa: *mut doca_dpa,
        other_dev: *mut doca_dev,
        extended_dpa: *mut *mut doca_dpa,
    ) => {
        super::dpa::dpa(dpa, "dpa")?;
        dev::dev(other_dev, "other_dev")?;
        Err(not_modelled(
            "doca_dpa_device_extend",
            "a DPA context serves the device it was created on; create one per device \
             (doca_dpa_create)",
        ))
    };
}

// ---- doca_mmap: exports between processes and peers ----

fn mmap_export(mmap: *mut doca_mmap, dev: *const doca_dev, to: &str) -> Result<()> {
    super::mmap::mmap(mmap, "mmap")?;
    dev::dev(dev, "dev")?;
    Err(not_modelled(
        to,
        "the soft device shares Comch buffers between processes by itself; mmap export \
         descriptors are not modelled",
    ))
}

fn export_cap(devinfo: *const doca_devinfo, supported: *mut u8, param: &str) -> Result<()> {
    dev::devinfo(devinfo, "devinfo")?;
    // SAFETY: writable by the C contract (checked non-null).
    unsafe { super::out(supported, param, 0) }
}

api! {
    fn doca_mmap_export_pci(
        mmap: *mut doca_mmap,
        dev: *const doca_dev,
        export_desc: *mut *const c_void,
        export_desc_len: *mut usize,
    ) => mmap_export(mmap, dev, "doca_mmap_export_pci");
    fn doca_mmap_export_rdma(
        mmap: *mut doca_mmap,
        dev: *const doca_dev,
        export_desc: *mut *const c_void,
        export_desc_len: *mut usize,
    ) => mmap_export(mmap, dev, "doca_mmap_export_rdma");
    fn doca_mmap_create_from_export(
        user_data: *const doca_data,
        export_desc: *const c_void,
        export_desc_len: usize,
        dev: *mut doca_dev,
        mmap: *mut *mut doca_mmap,
    ) => create_on(dev, "doca_mmap_create_from_export", "mmap export descriptors are not \
                                                       modelled");
    fn doca_mmap_cap_is_export_pci_supported(devinfo: *const doca_devinfo, mmap_export: *mut u8)
        => export_cap(devinfo, mmap_export, "mmap_export");
    fn doca_mmap_cap_is_create_from_export_pci_supported(
        devinfo: *const doca_devinfo,
        from_export: *mut u8,
    ) => export_cap(devinfo, from_export, "from_export");
}

// ---- doca_sync_event: remote network peers and GPUs ----

const SE: &str = "this part of doca_sync_event";

/// Validates the event, then answers that `what` is not modelled.
fn se(ev: *mut doca_sync_event, what: &str) -> Result<()> {
    event(ev)?;
    Err(not_modelled(SE, what))
}

const REMOTE_NET: &str =
    "remote network peers are not modelled; use CPU, DPA and remote PCI locations";
const GPU: &str = "GPUs are not modelled; use CPU, DPA and remote PCI locations";

fn remote_net(ptr: *const doca_sync_event_remote_net) -> Error {
    no_such(
        ptr.cast(),
        "event",
        "doca_sync_event_remote_net",
        SE,
        "doca_sync_event_remote_net_create_from_export",
    )
}

api! {
    fn doca_sync_event_add_publisher_location_gpu(event: *mut doca_sync_event, gpu: *mut doca_gpu)
        => se(event, GPU);
    fn doca_sync_event_add_subscriber_location_gpu(event: *mut doca_sync_event, gpu: *mut doca_gpu)
        => se(event, GPU);
    fn doca_sync_event_add_publisher_location_remote_net(event: *mut doca_sync_event)
        => se(event, REMOTE_NET);
    fn doca_sync_event_export_to_remote_net(
        event: *mut doca_sync_event,
        data: *mut *const u8,
        sz: *mut usize,
    ) => se(event, REMOTE_NET);
    fn doca_sync_event_cap_is_export_to_remote_net_supported(devinfo: *const doca_devinfo)
        => cap(devinfo, SE);
    fn doca_sync_event_remote_net_create_from_export(
        dev: *mut doca_dev,
        data: *const u8,
        sz: usize,
        event: *mut *mut doca_sync_event_remote_net,
    ) => create_on(dev, SE, REMOTE_NET);
    fn doca_sync_event_cap_remote_net_is_create_from_export_supported(devinfo: *const doca_devinfo)
        => cap(devinfo, SE);
    fn doca_sync_event_remote_net_destroy(event: *mut doca_sync_event_remote_net)
        => Err(remote_net(event));
    fn doca_sync_event_remote_net_get_dpa_handle(
        event: *mut doca_sync_event_remote_net,
        dpa: *mut doca_dpa,
        dpa_remote_event: *mut doca_dpa_dev_sync_event_remote_net_t,
    ) => Err(remote_net(event));
    fn doca_sync_event_cap_remote_net_is_export_to_dpa_supported(devinfo: *const doca_devinfo)
        => cap(devinfo, SE);
    fn doca_sync_event_get_gpu_handle(
        event: *mut doca_sync_event,
        gpu: *mut doca_gpu,
        gpu_dev_se: *mut *mut doca_gpu_dev_sync_event_t,
    ) => se(event, GPU);
    fn doca_sync_event_cap_is_export_to_gpu_supported(devinfo: *const doca_devinfo)
        => cap(devinfo, SE);
}
