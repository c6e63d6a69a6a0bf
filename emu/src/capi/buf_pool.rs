//! `doca_buf_pool.h`: buffer pools, whose buffers are `doca_buf`s like an inventory's.

use super::buf::BufObj;
use super::mmap;
use super::registry::{self, Kind, Object};
use super::types::*;
use super::{call, out};
use crate::buf::pool::BufPool;
use crate::error::Result;

/// A `struct doca_buf_pool`.
pub(crate) struct BufPoolObj {
    pool: BufPool,
}

impl Object for BufPoolObj {
    const KIND: Kind = Kind::BufPool;
}

fn pool<'a>(ptr: *const doca_buf_pool) -> Result<&'a BufPool> {
    registry::get::<BufPoolObj>(ptr.cast(), "buf_pool").map(|p| &p.pool)
}

/// `doca_buf_pool_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_create(
    num_elements: usize,
    element_size: usize,
    mmap: *const doca_mmap,
    buf_pool: *mut *mut doca_buf_pool,
) -> doca_error_t {
    call("doca_buf_pool_create", || {
        let m = mmap::mmap(mmap, "mmap")?;
        super::non_null(buf_pool, "buf_pool")?;
        let pool = BufPool::create(num_elements, element_size, &m.mmap)?;
        let handle = registry::register(Box::new(BufPoolObj { pool }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(buf_pool, "buf_pool", handle.cast()) }
    })
}

/// `doca_buf_pool_destroy`: stops the pool; `IN_USE` while its buffers are referenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_destroy(buf_pool: *mut doca_buf_pool) -> doca_error_t {
    call("doca_buf_pool_destroy", || {
        pool(buf_pool)?.check_all_returned("doca_buf_pool_destroy")?;
        registry::retire::<BufPoolObj>(buf_pool.cast());
        Ok(())
    })
}

/// `doca_buf_pool_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_start(buf_pool: *mut doca_buf_pool) -> doca_error_t {
    call("doca_buf_pool_start", || pool(buf_pool)?.start())
}

/// `doca_buf_pool_stop`: `IN_USE` while its buffers are referenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_stop(buf_pool: *mut doca_buf_pool) -> doca_error_t {
    call("doca_buf_pool_stop", || pool(buf_pool)?.stop())
}

/// `doca_buf_pool_buf_alloc`: `EMPTY` when every element is taken.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_buf_alloc(
    buf_pool: *mut doca_buf_pool,
    buf: *mut *mut doca_buf,
) -> doca_error_t {
    call("doca_buf_pool_buf_alloc", || {
        let pool = pool(buf_pool)?;
        super::non_null(buf, "buf")?;
        let b = pool.buf_alloc()?;
        let handle = registry::register(Box::new(BufObj { buf: b }))?;
        // SAFETY: checked non-null; writable by the C contract.
        unsafe { out(buf, "buf", handle.cast()) }
    })
}

/// `doca_buf_pool_set_user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_set_user_data(
    buf_pool: *mut doca_buf_pool,
    user_data: doca_data,
) -> doca_error_t {
    call("doca_buf_pool_set_user_data", || {
        pool(buf_pool)?.set_user_data(user_data.bits())
    })
}

/// `doca_buf_pool_set_element_alignment`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_set_element_alignment(
    buf_pool: *mut doca_buf_pool,
    element_alignment: usize,
) -> doca_error_t {
    call("doca_buf_pool_set_element_alignment", || {
        pool(buf_pool)?.set_element_alignment(element_alignment)
    })
}

/// `doca_buf_pool_get_num_elements`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_get_num_elements(
    buf_pool: *const doca_buf_pool,
    num_of_elements: *mut u32,
) -> doca_error_t {
    call("doca_buf_pool_get_num_elements", || {
        let n = pool(buf_pool)?.get_num_elements();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(num_of_elements, "num_of_elements", n) }
    })
}

/// `doca_buf_pool_get_num_free_elements`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_get_num_free_elements(
    buf_pool: *const doca_buf_pool,
    num_of_free_elements: *mut u32,
) -> doca_error_t {
    call("doca_buf_pool_get_num_free_elements", || {
        let n = pool(buf_pool)?.get_num_free_elements();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(num_of_free_elements, "num_of_free_elements", n) }
    })
}

/// `doca_buf_pool_get_user_data`: 0 unless set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_get_user_data(
    buf_pool: *const doca_buf_pool,
    user_data: *mut doca_data,
) -> doca_error_t {
    call("doca_buf_pool_get_user_data", || {
        let d = doca_data::from_bits(pool(buf_pool)?.get_user_data());
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(user_data, "user_data", d) }
    })
}

/// `doca_buf_pool_get_element_alignment`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn doca_buf_pool_get_element_alignment(
    buf_pool: *const doca_buf_pool,
    element_alignment: *mut usize,
) -> doca_error_t {
    call("doca_buf_pool_get_element_alignment", || {
        let a = pool(buf_pool)?.get_element_alignment();
        // SAFETY: writable by the C contract (checked non-null).
        unsafe { out(element_alignment, "element_alignment", a) }
    })
}
