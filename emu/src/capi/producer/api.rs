//! The `doca_comch_producer_*` functions of the C API.

use super::*;
use crate::capi::dpa_completion::DpaCompletionObj;
use crate::capi::registry;
use crate::capi::{call, call_value, out};
use crate::error::{Result, bail};
use crate::limits::{CPU_MAX_NUM_TASKS, MAX_IMM_DATA_LEN, PRODUCER_MAX_NUM_SEND};
use std::ffi::c_void;

/// `doca_comch_producer_cap_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_cap_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call("doca_comch_producer_cap_is_supported", || {
        crate::capi::dev::devinfo(devinfo, "devinfo")?.comch_producer_cap_is_supported()
    })
}

/// `doca_comch_producer_cap_get_max_num_tasks`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_cap_get_max_num_tasks(
    devinfo: *const doca_devinfo,
    max_num_tasks: *mut u32,
) -> doca_error_t {
    call("doca_comch_producer_cap_get_max_num_tasks", || {
        let n = crate::capi::dev::devinfo(devinfo, "devinfo")?
            .comch_producer_cap_get_max_num_tasks()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_num_tasks, "max_num_tasks", n) }
    })
}

/// `doca_comch_producer_cap_get_max_buf_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_cap_get_max_buf_size(
    devinfo: *const doca_devinfo,
    max_buf_size: *mut u32,
) -> doca_error_t {
    call("doca_comch_producer_cap_get_max_buf_size", || {
        let info = crate::capi::dev::devinfo(devinfo, "devinfo")?;
        info.comch_producer_cap_is_supported()?;
        let n = u32::try_from(crate::limits::MMAP_MAX_LEN).unwrap_or(u32::MAX);
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_buf_size, "max_buf_size", n) }
    })
}

/// `doca_comch_producer_destroy`: the context must be IDLE.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_destroy(
    producer: *mut doca_comch_producer,
) -> doca_error_t {
    call("doca_comch_producer_destroy", || {
        let p = super::producer(producer, "producer")?;
        p.core.require_idle("destroy the producer")?;
        if let Some(pe) = crate::capi::pe::of(&p.core) {
            pe.disconnect(p.core.handle.get());
        }
        if let Ok(comp) = registry::get::<DpaCompletionObj>(p.dpa_completion.get(), "completion") {
            comp.users.release();
        }
        match &p.link {
            Some(link) => link.release(),
            None => p.msgq()?.release_producer(),
        }
        p.tasks.release();
        registry::retire::<ProducerObj>(producer.cast());
        Ok(())
    })
}

/// `doca_comch_producer_as_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_as_ctx(
    producer: *mut doca_comch_producer,
) -> *mut doca_ctx {
    call_value("doca_comch_producer_as_ctx", std::ptr::null_mut(), || {
        super::producer(producer, "producer")?;
        Ok(producer.cast())
    })
}

/// `doca_comch_producer_get_id`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_get_id(
    producer: *const doca_comch_producer,
    id: *mut u32,
) -> doca_error_t {
    call("doca_comch_producer_get_id", || {
        let p = super::producer(producer, "producer")?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(id, "id", p.id) }
    })
}

/// `doca_comch_producer_task_send_set_conf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_task_send_set_conf(
    producer: *mut doca_comch_producer,
    task_completion_cb: doca_comch_producer_task_send_completion_cb_t,
    task_error_cb: doca_comch_producer_task_send_completion_cb_t,
    num_send_tasks: u32,
) -> doca_error_t {
    call("doca_comch_producer_task_send_set_conf", || {
        let p = super::producer(producer, "producer")?;
        p.core.require_idle("configure send tasks")?;
        if task_completion_cb.is_none() || task_error_cb.is_none() {
            bail!(
                InvalidValue,
                "both the completion and the error callback are required"
            );
        }
        if num_send_tasks == 0 || num_send_tasks as usize > CPU_MAX_NUM_TASKS {
            bail!(
                InvalidValue,
                "num_send_tasks {num_send_tasks} is outside 1..={CPU_MAX_NUM_TASKS} \
                 (doca_comch_producer_cap_get_max_num_tasks)"
            );
        }
        p.conf.set(Some(SendConf {
            on_success: task_completion_cb,
            on_error: task_error_cb,
            num_tasks: num_send_tasks,
        }));
        Ok(())
    })
}

/// `doca_comch_producer_task_send_alloc_init`: immediate data only on a MsgQ (`buf` NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_task_send_alloc_init(
    producer: *mut doca_comch_producer,
    buf: *const doca_buf,
    imm_data: *mut u8,
    imm_data_len: u32,
    consumer_id: u32,
    task: *mut *mut doca_comch_producer_task_send,
) -> doca_error_t {
    call("doca_comch_producer_task_send_alloc_init", || {
        let p = super::producer(producer, "producer")?;
        crate::capi::non_null(task, "task")?;
        if !buf.is_null() {
            if p.link.is_none() {
                bail!(
                    NotSupported,
                    "MsgQ producers send immediate data only: pass buf = NULL (buffers travel \
                     on producers of a Comch connection)"
                );
            }
            send_data(buf.cast())?;
        }
        if imm_data_len as usize > MAX_IMM_DATA_LEN {
            bail!(
                InvalidValue,
                "immediate data of {imm_data_len} bytes exceeds the MsgQ limit of \
                 {MAX_IMM_DATA_LEN} bytes"
            );
        }
        if imm_data.is_null() && imm_data_len > 0 {
            bail!(
                InvalidValue,
                "imm_data is NULL with imm_data_len {imm_data_len}"
            );
        }
        let imm: &[u8] = if imm_data_len == 0 {
            &[]
        } else {
            // SAFETY: `imm_data` holds `imm_data_len` (<= 32) readable bytes by the C contract.
            unsafe { std::slice::from_raw_parts(imm_data, imm_data_len as usize) }
        };
        let handle = p.tasks.alloc(p.core.state(), |t| {
            t.imm.set(crate::ring::padded_imm(imm));
            t.imm_len.set(imm_data_len);
            t.consumer_id.set(consumer_id);
            t.buf.set(buf.cast());
            t.core.handle.get()
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(task, "task", handle.cast()) }
    })
}

/// `doca_comch_producer_task_send_as_task`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_task_send_as_task(
    task: *mut doca_comch_producer_task_send,
) -> *mut doca_task {
    call_value(
        "doca_comch_producer_task_send_as_task",
        std::ptr::null_mut(),
        || {
            send_task(task, "task")?;
            Ok(task.cast())
        },
    )
}

/// `doca_comch_producer_task_send_get_buf`: the task's buffer (NULL on a MsgQ).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_task_send_get_buf(
    task: *const doca_comch_producer_task_send,
) -> *const doca_buf {
    call_value(
        "doca_comch_producer_task_send_get_buf",
        std::ptr::null(),
        || Ok(send_task(task, "task")?.buf.get().cast()),
    )
}

/// `doca_comch_producer_set_dev_max_num_send`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_set_dev_max_num_send(
    producer: *mut doca_comch_producer,
    dev_num_send: u32,
) -> doca_error_t {
    call("doca_comch_producer_set_dev_max_num_send", || {
        let p = super::producer(producer, "producer")?;
        p.core.require_idle("set the number of DPA sends")?;
        if dev_num_send == 0 || dev_num_send as usize > PRODUCER_MAX_NUM_SEND {
            bail!(
                InvalidValue,
                "dev_num_send {dev_num_send} is outside 1..={PRODUCER_MAX_NUM_SEND}"
            );
        }
        p.dev_max_num_send.set(dev_num_send);
        Ok(())
    })
}

/// `doca_comch_producer_dpa_completion_attach`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_dpa_completion_attach(
    producer: *mut doca_comch_producer,
    dpa_comp: *mut doca_dpa_completion,
) -> doca_error_t {
    call("doca_comch_producer_dpa_completion_attach", || {
        let p = super::producer(producer, "producer")?;
        let comp = registry::get::<DpaCompletionObj>(dpa_comp.cast(), "dpa_comp")?;
        p.core.require_idle("attach a DPA completion")?;
        if let Ok(old) = registry::get::<DpaCompletionObj>(p.dpa_completion.get(), "old") {
            old.users.release();
        }
        comp.users.hold();
        p.dpa_completion.set(dpa_comp.cast());
        Ok(())
    })
}

/// `doca_comch_producer_get_dpa_handle`: for a started producer whose datapath is on the DPA.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_get_dpa_handle(
    producer: *mut doca_comch_producer,
    dpa_producer: *mut doca_dpa_dev_comch_producer_t,
) -> doca_error_t {
    call("doca_comch_producer_get_dpa_handle", || {
        let p = super::producer(producer, "producer")?;
        let handle = match p.running.borrow().as_ref() {
            Some(Running::Dpa(model)) => model.dpa_handle().raw(),
            Some(Running::Cpu(_) | Running::Fast(_)) => bail!(
                NotSupported,
                "the producer runs on the CPU: only DPA producers have a DPA handle"
            ),
            None => bail!(BadState, "start the producer first"),
        };
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(dpa_producer, "dpa_producer", handle) }
    })
}

/// The data of a send task's buffer (none without a buffer); `INVALID_VALUE` for a buffer of
/// more than the largest a producer sends.
pub(super) fn send_data<'a>(buf: *const c_void) -> Result<&'a [u8]> {
    if buf.is_null() {
        return Ok(&[]);
    }
    let view = crate::capi::buf::buf(buf.cast())?.buf.view()?;
    if view.data_len > crate::limits::MMAP_MAX_LEN {
        bail!(
            InvalidValue,
            "a {}-byte buffer is larger than a producer sends (doca_comch_producer_cap_get_max_buf_size)",
            view.data_len
        );
    }
    if view.data_len == 0 {
        return Ok(&[]);
    }
    // SAFETY: the buffer's data window lies in its mmap's registered memory, which the program
    // keeps valid while the buffer (held by the task) exists.
    Ok(unsafe { std::slice::from_raw_parts(view.data, view.data_len) })
}

/// `doca_comch_producer_create`: a producer on a Comch connection.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_producer_create(
    comch_connection: *mut doca_comch_connection,
    producer: *mut *mut doca_comch_producer,
) -> doca_error_t {
    call("doca_comch_producer_create", || {
        let conn = crate::capi::connection::connection(comch_connection, "comch_connection")?;
        crate::capi::non_null(producer, "producer")?;
        let link = Link::hold(conn)?;
        let id = link.producer_id();
        // A refused registration drops (and so releases) the link.
        let handle = ProducerObj::register(std::ptr::null_mut(), Some(link), id)?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(producer, "producer", handle.cast()) }
    })
}

/// `doca_comch_msgq_producer_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_producer_create(
    msgq: *mut doca_comch_msgq,
    producer: *mut *mut doca_comch_producer,
) -> doca_error_t {
    call("doca_comch_msgq_producer_create", || {
        let q = crate::capi::msgq::msgq(msgq, "msgq")?;
        crate::capi::non_null(producer, "producer")?;
        q.model()?;
        let id = q.reserve_producer()?;
        let handle = ProducerObj::create(msgq.cast(), id).inspect_err(|_| q.release_producer())?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(producer, "producer", handle.cast()) }
    })
}
