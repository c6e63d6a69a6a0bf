//! Completion contexts on the DPA: consumer completions (`doca_comch_consumer_completion`),
//! DPA completions (`doca_dpa_completion`) and notification completions
//! (`doca_dpa_notification_completion`). Each keeps the thread it triggers alive.

use super::{Dpa, DpaThread};
use crate::error::{Result, bail, doca};
use dpakit_abi::MAX_IMM_DATA_LEN;
use dpakit_abi::handles::{
    CompletionHandle, ConsumerCompletionHandle, NotificationCompletionHandle,
};
use dpakit_sys as sys;
use std::fmt;
use std::rc::Rc;

/// Configuration of a [`ConsumerCompletion`].
#[derive(Debug)]
pub struct ConsumerCompletionBuilder<'a> {
    dpa: &'a Dpa,
    max_num_consumers: u32,
    max_num_recv: u32,
    imm_data_len: u32,
    thread: Option<&'a DpaThread>,
}

struct ConsumerCompletionInner {
    raw: *mut sys::doca_comch_consumer_completion,
    handle: ConsumerCompletionHandle,
    _thread: Option<DpaThread>,
    _dpa: Dpa,
}

impl Drop for ConsumerCompletionInner {
    #[doc(alias = "doca_comch_consumer_completion_destroy")]
    fn drop(&mut self) {
        // Consumers keep a clone of their completion, so none reports here any more.
        let _ = doca!(doca_comch_consumer_completion_stop(self.raw));
        let _ = doca!(doca_comch_consumer_completion_destroy(self.raw));
    }
}

/// `doca_comch_consumer_completion`: where DPA consumers report received messages.
#[doc(alias = "doca_comch_consumer_completion")]
#[derive(Clone)]
pub struct ConsumerCompletion {
    inner: Rc<ConsumerCompletionInner>,
}

impl fmt::Debug for ConsumerCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConsumerCompletion")
            .field(&self.inner.handle)
            .finish()
    }
}

impl<'a> ConsumerCompletionBuilder<'a> {
    /// `doca_comch_consumer_completion_set_max_num_consumers` (default 1).
    #[doc(alias = "doca_comch_consumer_completion_set_max_num_consumers")]
    pub fn max_num_consumers(mut self, n: u32) -> Self {
        self.max_num_consumers = n;
        self
    }

    /// `doca_comch_consumer_completion_set_max_num_recv`: messages the context holds before
    /// the kernel acks them (default 64).
    #[doc(alias = "doca_comch_consumer_completion_set_max_num_recv")]
    pub fn max_num_recv(mut self, n: u32) -> Self {
        self.max_num_recv = n;
        self
    }

    /// `doca_comch_consumer_completion_set_imm_data_len` (≤ 32; default 32).
    #[doc(alias = "doca_comch_consumer_completion_set_imm_data_len")]
    pub fn imm_data_len(mut self, len: u32) -> Self {
        self.imm_data_len = len;
        self
    }

    /// `doca_comch_consumer_completion_set_dpa_thread`: the thread new messages trigger.
    #[doc(alias = "doca_comch_consumer_completion_set_dpa_thread")]
    pub fn dpa_thread(mut self, thread: &'a DpaThread) -> Self {
        self.thread = Some(thread);
        self
    }

    /// `doca_comch_consumer_completion_create` + configuration + `_start`.
    #[doc(alias = "doca_comch_consumer_completion_start")]
    pub fn start(self) -> Result<ConsumerCompletion> {
        // DOCA's consumer completion takes its DPA from the thread: a thread of another DPA
        // would silently move it there.
        if let Some(thread) = self.thread {
            if thread.dpa().raw() != self.dpa.raw() {
                bail!(
                    InvalidValue,
                    "the DPA thread belongs to another DPA context than the consumer completion"
                );
            }
        }
        let mut raw = std::ptr::null_mut();
        doca!(doca_comch_consumer_completion_create(&mut raw))?;
        let mut inner = ConsumerCompletionInner {
            raw,
            handle: ConsumerCompletionHandle(0),
            _thread: self.thread.cloned(),
            _dpa: self.dpa.clone(),
        };
        doca!(doca_comch_consumer_completion_set_max_num_consumers(
            raw,
            self.max_num_consumers
        ))?;
        doca!(doca_comch_consumer_completion_set_max_num_recv(
            raw,
            self.max_num_recv
        ))?;
        doca!(doca_comch_consumer_completion_set_imm_data_len(
            raw,
            self.imm_data_len
        ))?;
        if let Some(thread) = self.thread {
            doca!(doca_comch_consumer_completion_set_dpa_thread(
                raw,
                thread.raw()
            ))?;
        }
        doca!(doca_comch_consumer_completion_start(raw))?;
        doca!(doca_comch_consumer_completion_get_dpa_handle(
            raw,
            &mut inner.handle.0
        ))?;
        Ok(ConsumerCompletion {
            inner: Rc::new(inner),
        })
    }
}

impl ConsumerCompletion {
    /// `doca_comch_consumer_completion_create`: a completion context for consumers of `dpa`.
    #[doc(alias = "doca_comch_consumer_completion_create")]
    pub fn builder(dpa: &Dpa) -> ConsumerCompletionBuilder<'_> {
        ConsumerCompletionBuilder {
            dpa,
            max_num_consumers: 1,
            max_num_recv: 64,
            imm_data_len: MAX_IMM_DATA_LEN as u32,
            thread: None,
        }
    }

    /// `doca_comch_consumer_completion_get_dpa_handle`.
    #[doc(alias = "doca_comch_consumer_completion_get_dpa_handle")]
    pub fn dpa_handle(&self) -> ConsumerCompletionHandle {
        self.inner.handle
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_comch_consumer_completion {
        self.inner.raw
    }
}

struct DpaCompletionInner {
    raw: *mut sys::doca_dpa_completion,
    handle: CompletionHandle,
    _thread: Option<DpaThread>,
    _dpa: Dpa,
}

impl Drop for DpaCompletionInner {
    #[doc(alias = "doca_dpa_completion_destroy")]
    fn drop(&mut self) {
        // Producers keep a clone of their completion, so none reports here any more.
        let _ = doca!(doca_dpa_completion_stop(self.raw));
        let _ = doca!(doca_dpa_completion_destroy(self.raw));
    }
}

/// `doca_dpa_completion`: where DPA producers report finished sends and copies.
#[doc(alias = "doca_dpa_completion")]
#[derive(Clone)]
pub struct DpaCompletion {
    inner: Rc<DpaCompletionInner>,
}

impl fmt::Debug for DpaCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DpaCompletion")
            .field(&self.inner.handle)
            .finish()
    }
}

impl DpaCompletion {
    /// `doca_dpa_completion_create` + optional `doca_dpa_completion_set_thread` +
    /// `doca_dpa_completion_start`.
    #[doc(alias = "doca_dpa_completion_create")]
    pub fn start(dpa: &Dpa, queue_size: u32, thread: Option<&DpaThread>) -> Result<DpaCompletion> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_dpa_completion_create(dpa.raw(), queue_size, &mut raw))?;
        let mut inner = DpaCompletionInner {
            raw,
            handle: CompletionHandle(0),
            _thread: thread.cloned(),
            _dpa: dpa.clone(),
        };
        if let Some(thread) = thread {
            doca!(doca_dpa_completion_set_thread(raw, thread.raw()))?;
        }
        doca!(doca_dpa_completion_start(raw))?;
        doca!(doca_dpa_completion_get_dpa_handle(raw, &mut inner.handle.0))?;
        Ok(DpaCompletion {
            inner: Rc::new(inner),
        })
    }

    /// `doca_dpa_completion_get_dpa_handle`.
    #[doc(alias = "doca_dpa_completion_get_dpa_handle")]
    pub fn dpa_handle(&self) -> CompletionHandle {
        self.inner.handle
    }

    pub(crate) fn raw(&self) -> *mut sys::doca_dpa_completion {
        self.inner.raw
    }
}

/// `doca_dpa_notification_completion`: lets kernels trigger a thread.
#[doc(alias = "doca_dpa_notification_completion")]
pub struct NotificationCompletion {
    raw: *mut sys::doca_dpa_notification_completion,
    handle: NotificationCompletionHandle,
    _thread: DpaThread,
}

impl fmt::Debug for NotificationCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("NotificationCompletion")
            .field(&self.handle)
            .finish()
    }
}

impl NotificationCompletion {
    /// `doca_dpa_notification_completion_create` + `_start` for `thread` (started).
    #[doc(alias = "doca_dpa_notification_completion_create")]
    pub fn start(dpa: &Dpa, thread: &DpaThread) -> Result<NotificationCompletion> {
        let mut raw = std::ptr::null_mut();
        doca!(doca_dpa_notification_completion_create(
            dpa.raw(),
            thread.raw(),
            &mut raw
        ))?;
        let mut n = NotificationCompletion {
            raw,
            handle: NotificationCompletionHandle(0),
            _thread: thread.clone(),
        };
        doca!(doca_dpa_notification_completion_start(raw))?;
        doca!(doca_dpa_notification_completion_get_dpa_handle(
            raw,
            &mut n.handle.0
        ))?;
        Ok(n)
    }

    /// `doca_dpa_notification_completion_get_dpa_handle`: what kernels pass to
    /// `doca_dpa_dev_thread_notify`.
    #[doc(alias = "doca_dpa_notification_completion_get_dpa_handle")]
    pub fn dpa_handle(&self) -> NotificationCompletionHandle {
        self.handle
    }
}

impl Drop for NotificationCompletion {
    #[doc(alias = "doca_dpa_notification_completion_destroy")]
    fn drop(&mut self) {
        let _ = doca!(doca_dpa_notification_completion_stop(self.raw));
        let _ = doca!(doca_dpa_notification_completion_destroy(self.raw));
    }
}
