//! Async waits on a tokio runtime (feature `tokio`): the PE's notification handle goes into
//! tokio's reactor, so a task waiting for work sleeps like any other I/O and never polls while
//! idle. A PE and its contexts stay on one thread, as in DOCA: run them on a current-thread
//! runtime or a `LocalSet`.

use crate::error::{Result, bail};
use crate::pe::{Pe, ReactorHandle as Handle};
use std::task::{Context, Poll};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

impl Pe {
    /// Waits until a progress pass runs a callback (or delivers an event): progresses once,
    /// then, if nothing was ready, arms the notification handle and sleeps in tokio's reactor
    /// until it fires. Inside a tokio runtime with I/O enabled only (as `#[tokio::main]` makes);
    /// `BAD_STATE` inside a callback of this PE.
    pub async fn progressed(&self) -> Result<()> {
        self.require_outside_callback("Pe::progressed")?;
        std::future::poll_fn(|cx| self.poll_progressed(cx)).await
    }

    /// [`progressed`](Self::progressed) as a poll, for futures and streams of one's own:
    /// `Ready` once a pass ran something, else `Pending` with `cx`'s waker registered in tokio's
    /// reactor on the notification handle.
    pub fn poll_progressed(&self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        loop {
            if self.progress() {
                return Poll::Ready(Ok(()));
            }
            let fd = self.reactor()?;
            self.request_notification()?;
            // Work that came between the pass and the arming has signalled the handle; look
            // once more before sleeping, so nothing waits for a later wake-up.
            if self.progress() {
                self.clear_notification()?;
                return Poll::Ready(Ok(()));
            }
            // The reactor reports edges, the handle is a level: a descriptor in the PE's set
            // that a pass did not drain yet (a socket looked at every few passes) keeps it
            // readable without a new edge. Sleep only while it is not.
            if !self.readable_now() {
                let mut ready = match fd.poll_read_ready(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(ready)) => ready,
                    Poll::Ready(Err(e)) => {
                        return Poll::Ready(Err(crate::Error::new(
                            crate::ErrorCode::OperatingSystem,
                            format!(
                                "waiting on the PE notification handle in the tokio reactor \
                                 failed: {e}"
                            ),
                        )));
                    }
                };
                if !self.readable_now() {
                    ready.clear_ready();
                }
            }
            self.clear_notification()?;
        }
    }

    /// Whether the notification handle is readable at this moment.
    fn readable_now(&self) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.notification_handle(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout never blocks.
        unsafe { libc::poll(&mut pfd, 1, 0) > 0 }
    }

    /// The handle in the current runtime's reactor, registered on first use.
    fn reactor(&self) -> Result<&AsyncFd<Handle>> {
        if let Some(fd) = self.reactor_cell().get() {
            return Ok(fd);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            bail!(
                BadState,
                "an async wait of a PE needs a tokio runtime: call it from inside one (e.g. \
                 #[tokio::main(flavor = \"current_thread\")])"
            );
        }
        let handle = Handle(self.notification_handle());
        // SAFETY: the PE keeps its notification handle open, the same descriptor, until its
        // last clone goes; its drop takes this registration out of the reactor first.
        match unsafe { AsyncFd::register_with_interest(handle, Interest::READABLE) } {
            Ok(fd) => Ok(self.reactor_cell().get_or_init(|| fd)),
            Err(e) => bail!(
                OperatingSystem,
                "cannot register the PE notification handle with the tokio reactor (a runtime \
                 with I/O enabled is needed): {}",
                e
            ),
        }
    }
}
