//! The `doca_comch_consumer_*` functions of the C API.

use super::*;
use crate::capi::consumer_completion::ConsumerCompletionObj;
use crate::capi::registry;
use crate::capi::{call, call_value, out};
use crate::error::bail;
use crate::limits::{CONSUMER_MAX_NUM_RECV, CPU_MAX_NUM_TASKS, MAX_IMM_DATA_LEN};

/// `doca_comch_consumer_cap_is_supported`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_cap_is_supported(
    devinfo: *const doca_devinfo,
) -> doca_error_t {
    call("doca_comch_consumer_cap_is_supported", || {
        crate::capi::dev::devinfo(devinfo, "devinfo")?.comch_consumer_cap_is_supported()
    })
}

/// `doca_comch_consumer_cap_get_max_num_tasks`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_cap_get_max_num_tasks(
    devinfo: *const doca_devinfo,
    max_num_tasks: *mut u32,
) -> doca_error_t {
    call("doca_comch_consumer_cap_get_max_num_tasks", || {
        let n = crate::capi::dev::devinfo(devinfo, "devinfo")?
            .comch_consumer_cap_get_max_num_tasks()?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_num_tasks, "max_num_tasks", n) }
    })
}

/// `doca_comch_consumer_cap_get_max_buf_size`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_cap_get_max_buf_size(
    devinfo: *const doca_devinfo,
    max_buf_size: *mut u32,
) -> doca_error_t {
    call("doca_comch_consumer_cap_get_max_buf_size", || {
        let info = crate::capi::dev::devinfo(devinfo, "devinfo")?;
        info.comch_consumer_cap_is_supported()?;
        let n = u32::try_from(crate::limits::MMAP_MAX_LEN).unwrap_or(u32::MAX);
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(max_buf_size, "max_buf_size", n) }
    })
}

/// `doca_comch_consumer_destroy`: the context must be IDLE.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_destroy(
    consumer: *mut doca_comch_consumer,
) -> doca_error_t {
    call("doca_comch_consumer_destroy", || {
        let c = super::consumer(consumer, "consumer")?;
        c.core.require_idle("destroy the consumer")?;
        if let Some(pe) = crate::capi::pe::of(&c.core) {
            pe.disconnect(c.core.handle.get());
        }
        if let Some((comp, _)) = c.completion.get() {
            if let Ok(comp) = registry::get::<ConsumerCompletionObj>(comp, "completion") {
                comp.users.release();
            }
        }
        match &c.link {
            Some(attached) => attached.link.release(),
            None => c.msgq()?.release_consumer_id(c.id),
        }
        c.tasks.release();
        registry::retire::<ConsumerObj>(consumer.cast());
        Ok(())
    })
}

/// `doca_comch_consumer_as_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_as_ctx(
    consumer: *mut doca_comch_consumer,
) -> *mut doca_ctx {
    call_value("doca_comch_consumer_as_ctx", std::ptr::null_mut(), || {
        super::consumer(consumer, "consumer")?;
        Ok(consumer.cast())
    })
}

/// `doca_comch_consumer_get_id`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_get_id(
    consumer: *const doca_comch_consumer,
    id: *mut u32,
) -> doca_error_t {
    call("doca_comch_consumer_get_id", || {
        let c = super::consumer(consumer, "consumer")?;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(id, "id", c.id) }
    })
}

/// `doca_comch_consumer_set_imm_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_set_imm_data_len(
    consumer: *mut doca_comch_consumer,
    imm_data_len: u32,
) -> doca_error_t {
    call("doca_comch_consumer_set_imm_data_len", || {
        let c = super::consumer(consumer, "consumer")?;
        c.core.require_idle("set the immediate data length")?;
        if imm_data_len as usize > MAX_IMM_DATA_LEN {
            bail!(
                InvalidValue,
                "imm_data_len {imm_data_len} exceeds the MsgQ limit of {MAX_IMM_DATA_LEN} bytes"
            );
        }
        c.imm_data_len.set(imm_data_len);
        Ok(())
    })
}

/// `doca_comch_consumer_task_post_recv_set_conf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_set_conf(
    consumer: *mut doca_comch_consumer,
    task_completion_cb: doca_comch_consumer_task_post_recv_completion_cb_t,
    task_error_cb: doca_comch_consumer_task_post_recv_completion_cb_t,
    num_post_recv_tasks: u32,
) -> doca_error_t {
    call("doca_comch_consumer_task_post_recv_set_conf", || {
        let c = super::consumer(consumer, "consumer")?;
        c.core.require_idle("configure post-receive tasks")?;
        if task_completion_cb.is_none() || task_error_cb.is_none() {
            bail!(
                InvalidValue,
                "both the completion and the error callback are required"
            );
        }
        if num_post_recv_tasks == 0 || num_post_recv_tasks as usize > CPU_MAX_NUM_TASKS {
            bail!(
                InvalidValue,
                "num_post_recv_tasks {num_post_recv_tasks} is outside 1..={CPU_MAX_NUM_TASKS} \
                 (doca_comch_consumer_cap_get_max_num_tasks)"
            );
        }
        c.conf.set(Some(RecvConf {
            on_success: task_completion_cb,
            on_error: task_error_cb,
            num_tasks: num_post_recv_tasks,
        }));
        Ok(())
    })
}

/// `doca_comch_consumer_task_post_recv_alloc_init`: no buffer on a MsgQ (`buf` NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_alloc_init(
    consumer: *mut doca_comch_consumer,
    buf: *mut doca_buf,
    task: *mut *mut doca_comch_consumer_task_post_recv,
) -> doca_error_t {
    call("doca_comch_consumer_task_post_recv_alloc_init", || {
        let c = super::consumer(consumer, "consumer")?;
        crate::capi::non_null(task, "task")?;
        if !buf.is_null() {
            if c.link.is_none() {
                bail!(
                    NotSupported,
                    "MsgQ consumers receive immediate data only: pass buf = NULL (buffers are \
                     for consumers on a Comch connection)"
                );
            }
            crate::capi::buf::buf(buf)?;
        }
        let handle = c.tasks.alloc(c.core.state(), |t| {
            t.imm_len.set(0);
            t.producer_id.set(0);
            t.buf.set(buf.cast());
            t.core.handle.get()
        })?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(task, "task", handle.cast()) }
    })
}

/// `doca_comch_consumer_task_post_recv_as_task`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_as_task(
    task: *mut doca_comch_consumer_task_post_recv,
) -> *mut doca_task {
    call_value(
        "doca_comch_consumer_task_post_recv_as_task",
        std::ptr::null_mut(),
        || {
            recv_task(task, "task")?;
            Ok(task.cast())
        },
    )
}

/// `doca_comch_consumer_task_post_recv_get_buf`: the task's buffer (NULL on a MsgQ).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_buf(
    task: *const doca_comch_consumer_task_post_recv,
) -> *mut doca_buf {
    call_value(
        "doca_comch_consumer_task_post_recv_get_buf",
        std::ptr::null_mut(),
        || Ok(recv_task(task, "task")?.buf.get().cast()),
    )
}

/// `doca_comch_consumer_task_post_recv_get_imm_data`: valid until the task is resubmitted or
/// freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_imm_data(
    task: *const doca_comch_consumer_task_post_recv,
) -> *const u8 {
    call_value(
        "doca_comch_consumer_task_post_recv_get_imm_data",
        std::ptr::null(),
        || {
            Ok(recv_task(task, "task")?
                .imm
                .as_ptr()
                .cast::<u8>()
                .cast_const())
        },
    )
}

/// `doca_comch_consumer_task_post_recv_get_imm_data_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_imm_data_len(
    task: *const doca_comch_consumer_task_post_recv,
) -> u32 {
    call_value(
        "doca_comch_consumer_task_post_recv_get_imm_data_len",
        0,
        || Ok(recv_task(task, "task")?.imm_len.get()),
    )
}

/// `doca_comch_consumer_task_post_recv_get_producer_id`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_task_post_recv_get_producer_id(
    task: *const doca_comch_consumer_task_post_recv,
) -> u32 {
    call_value(
        "doca_comch_consumer_task_post_recv_get_producer_id",
        0,
        || Ok(recv_task(task, "task")?.producer_id.get()),
    )
}

/// `doca_comch_consumer_set_dev_max_num_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_set_dev_max_num_recv(
    consumer: *mut doca_comch_consumer,
    dev_num_recv: u32,
) -> doca_error_t {
    call("doca_comch_consumer_set_dev_max_num_recv", || {
        let c = super::consumer(consumer, "consumer")?;
        c.core.require_idle("set the number of DPA receives")?;
        if dev_num_recv == 0 || dev_num_recv as usize > CONSUMER_MAX_NUM_RECV {
            bail!(
                InvalidValue,
                "dev_num_recv {dev_num_recv} is outside 1..={CONSUMER_MAX_NUM_RECV}"
            );
        }
        c.dev_max_num_recv.set(dev_num_recv);
        Ok(())
    })
}

/// `doca_comch_consumer_set_completion`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_set_completion(
    consumer: *mut doca_comch_consumer,
    consumer_comp: *mut doca_comch_consumer_completion,
    user_data: u32,
) -> doca_error_t {
    call("doca_comch_consumer_set_completion", || {
        let c = super::consumer(consumer, "consumer")?;
        let comp = registry::get::<ConsumerCompletionObj>(consumer_comp.cast(), "consumer_comp")?;
        c.core.require_idle("set the consumer completion")?;
        if let Some((old, _)) = c.completion.get() {
            if let Ok(old) = registry::get::<ConsumerCompletionObj>(old, "old") {
                old.users.release();
            }
        }
        comp.users.hold();
        c.completion.set(Some((consumer_comp.cast(), user_data)));
        Ok(())
    })
}

/// `doca_comch_consumer_get_dpa_handle`: for a started consumer whose datapath is on the DPA.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_get_dpa_handle(
    consumer: *mut doca_comch_consumer,
    dpa_consumer: *mut doca_dpa_dev_comch_consumer_t,
) -> doca_error_t {
    call("doca_comch_consumer_get_dpa_handle", || {
        let c = super::consumer(consumer, "consumer")?;
        let handle = match c.running.borrow().as_ref() {
            Some(Running::Dpa(model)) => model.dpa_handle().raw(),
            Some(Running::Cpu(_) | Running::Fast(_)) => bail!(
                NotSupported,
                "the consumer runs on the CPU: only DPA consumers have a DPA handle"
            ),
            None => bail!(BadState, "start the consumer first"),
        };
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(dpa_consumer, "dpa_consumer", handle) }
    })
}

/// `doca_comch_consumer_create`: a consumer on a Comch connection receiving into `buf_mmap`
/// (started, with PCI read-write access).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_consumer_create(
    comch_connection: *mut doca_comch_connection,
    buf_mmap: *mut doca_mmap,
    consumer: *mut *mut doca_comch_consumer,
) -> doca_error_t {
    call("doca_comch_consumer_create", || {
        let conn = crate::capi::connection::connection(comch_connection, "comch_connection")?;
        crate::capi::mmap::mmap(buf_mmap, "buf_mmap")?;
        crate::capi::non_null(consumer, "consumer")?;
        let link = Link::hold(conn)?;
        let id = link.consumer_id();
        let attached = Attached {
            link,
            mmap: buf_mmap.cast(),
        };
        // A refused registration drops (and so releases) the link.
        let handle = ConsumerObj::register(std::ptr::null_mut(), Some(attached), id)?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(consumer, "consumer", handle.cast()) }
    })
}

/// `doca_comch_msgq_consumer_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_msgq_consumer_create(
    msgq: *mut doca_comch_msgq,
    consumer: *mut *mut doca_comch_consumer,
) -> doca_error_t {
    call("doca_comch_msgq_consumer_create", || {
        let q = crate::capi::msgq::msgq(msgq, "msgq")?;
        crate::capi::non_null(consumer, "consumer")?;
        q.model()?;
        let id = q.reserve_consumer_id()?;
        let handle =
            ConsumerObj::create(msgq.cast(), id).inspect_err(|_| q.release_consumer_id(id))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(consumer, "consumer", handle.cast()) }
    })
}
