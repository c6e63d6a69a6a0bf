//! The `doca_comch_server_*` functions of the C API.

use super::*;

/// `doca_comch_server_create`: `ALREADY_EXIST` if a server of that name lives on the
/// representor's function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_create(
    dev: *mut doca_dev,
    repr: *mut doca_dev_rep,
    name: *const c_char,
    comch_server: *mut *mut doca_comch_server,
) -> doca_error_t {
    call("doca_comch_server_create", || {
        let d = crate::capi::dev::dev(dev, "dev")?;
        let r = registry::get::<DevRepObj>(repr.cast(), "repr")?;
        // SAFETY: a NUL-terminated string by the C contract (checked non-null).
        let name = unsafe { c_str(name, "name") }?;
        crate::capi::non_null(comch_server, "comch_server")?;
        d.dev.as_devinfo().comch_cap_server_is_supported()?;
        let rep_dev = r.rep.as_devinfo().dev();
        if rep_dev.pci_addr() != d.dev.as_devinfo().pci_addr()
            || rep_dev.side() != d.dev.as_devinfo().side()
        {
            bail!(
                InvalidValue,
                "the representor belongs to device {}, not to {}",
                rep_dev.pci_addr(),
                d.dev.as_devinfo().pci_addr()
            );
        }
        check_name(name)?;
        let function = r.rep.as_devinfo().get_pci_addr_str();
        let model = Server::new(name, function)?;
        crate::capi::context::register_view::<ServerObj>(registry::Kind::ComchServer);
        let handle = registry::register(Box::new(ServerObj {
            c: CtrlCore::new("server", dev.cast()),
            model,
            rep: repr.cast(),
            conn_cbs: Cell::new(ConnCbs::default()),
        }))?;
        let s = server(handle.cast(), "server")?;
        s.c.core.handle.set(handle);
        s.model.ep.token.set(handle);
        d.users.hold();
        r.users.hold();
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(comch_server, "comch_server", handle.cast()) }
    })
}

/// `doca_comch_server_destroy`: the context must be IDLE.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_destroy(
    comch_server: *mut doca_comch_server,
) -> doca_error_t {
    call("doca_comch_server_destroy", || {
        let s = server(comch_server, "comch_server")?;
        s.c.core.require_idle("destroy the server")?;
        if let Some(pe) = crate::capi::pe::of(&s.c.core) {
            pe.disconnect(s.c.core.handle.get());
        }
        if let Ok(d) = crate::capi::dev::dev(s.c.dev.cast(), "dev") {
            d.users.release();
        }
        if let Ok(r) = registry::get::<DevRepObj>(s.rep, "repr") {
            r.users.release();
        }
        s.c.tasks.release();
        registry::retire::<ServerObj>(comch_server.cast());
        Ok(())
    })
}

/// `doca_comch_server_as_ctx`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_as_ctx(
    comch_server: *mut doca_comch_server,
) -> *mut doca_ctx {
    call_value("doca_comch_server_as_ctx", std::ptr::null_mut(), || {
        server(comch_server, "comch_server")?;
        Ok(comch_server.cast())
    })
}

/// `doca_comch_server_get_device_rep`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_get_device_rep(
    comch_server: *const doca_comch_server,
    rep: *mut *mut doca_dev_rep,
) -> doca_error_t {
    call("doca_comch_server_get_device_rep", || {
        let r = server(comch_server, "comch_server")?.rep;
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(rep, "rep", r.cast()) }
    })
}

/// `doca_comch_server_event_connection_status_changed_register`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_event_connection_status_changed_register(
    comch_server: *mut doca_comch_server,
    connect_event_cb: doca_comch_event_connection_status_changed_cb_t,
    disconnect_event_cb: doca_comch_event_connection_status_changed_cb_t,
) -> doca_error_t {
    call(
        "doca_comch_server_event_connection_status_changed_register",
        || {
            let s = server(comch_server, "comch_server")?;
            s.c.core.require_idle("register connection callbacks")?;
            if connect_event_cb.is_none() || disconnect_event_cb.is_none() {
                bail!(
                    InvalidValue,
                    "both connection callbacks are needed (connect and disconnect)"
                );
            }
            s.conn_cbs.set(ConnCbs {
                connected: connect_event_cb,
                disconnected: disconnect_event_cb,
            });
            Ok(())
        },
    )
}

/// `doca_comch_server_disconnect`: `IN_USE` while producers or consumers exist on the
/// connection; the disconnect callback runs at the next progress and the peer is told.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_disconnect(
    comch_server: *mut doca_comch_server,
    connection: *mut doca_comch_connection,
) -> doca_error_t {
    call("doca_comch_server_disconnect", || {
        let s = server(comch_server, "comch_server")?;
        if s.c.core.state() != CtxState::Running {
            bail!(
                BadState,
                "the server is {}: it disconnects while running",
                s.c.core.state()
            );
        }
        s.model
            .disconnect(self::connection(connection, "connection")?)
    })
}

/// `doca_comch_server_event_connection_register`: the DOCA 2.7 name of
/// [`doca_comch_server_event_connection_status_changed_register`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_event_connection_register(
    comch_server: *mut doca_comch_server,
    connect_event_cb: doca_comch_event_connection_status_changed_cb_t,
    disconnect_event_cb: doca_comch_event_connection_status_changed_cb_t,
) -> doca_error_t {
    // SAFETY: the same contract as the function it names.
    unsafe {
        doca_comch_server_event_connection_status_changed_register(
            comch_server,
            connect_event_cb,
            disconnect_event_cb,
        )
    }
}

/// `doca_comch_server_get_device_repr`: the DOCA 2.7 name of
/// [`doca_comch_server_get_device_rep`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_comch_server_get_device_repr(
    comch_server: *const doca_comch_server,
    repr: *mut *mut doca_dev_rep,
) -> doca_error_t {
    // SAFETY: the same contract as the function it names.
    unsafe { doca_comch_server_get_device_rep(comch_server, repr) }
}

crate::capi::comch_api::endpoint_functions! {
    object: doca_comch_server, param: comch_server, get: server,
    set_max_msg_size: doca_comch_server_set_max_msg_size,
    set_recv_queue_size: doca_comch_server_set_recv_queue_size,
    get_max_msg_size: doca_comch_server_get_max_msg_size,
    get_recv_queue_size: doca_comch_server_get_recv_queue_size,
    get_device: doca_comch_server_get_device,
    task_send_set_conf: doca_comch_server_task_send_set_conf,
    task_send_alloc_init: doca_comch_server_task_send_alloc_init,
    event_msg_recv_register: doca_comch_server_event_msg_recv_register,
    event_consumer_register: doca_comch_server_event_consumer_register,
}
