//! A Comch endpoint's events as a [`Stream`] (feature `tokio`): the PE's notification handle
//! sleeps in tokio's reactor while nothing is ready, so an idle stream costs nothing.

use super::ctrl::{Event, Inner};
use crate::error::Result;
use futures_core::Stream;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The events of a [`Server`](super::Server) or [`Client`](super::Client) built without event
/// callbacks, as a [`Stream`] of `Result<Event>`, from
/// [`Server::events`](super::Server::events) or [`Client::events`](super::Client::events).
///
/// It does not end while the endpoint lives (a server hears of new clients until it is
/// dropped); the stream of an endpoint with callbacks, which queues nothing, ends at once. An
/// error (no tokio runtime, a poll from inside one of the PE's callbacks) is an item; the stream
/// goes on after it. On a current-thread runtime or a `LocalSet`: a PE stays on its thread.
pub struct Events<'a> {
    inner: &'a Inner,
}

impl<'a> Events<'a> {
    pub(super) fn new(inner: &'a Inner) -> Self {
        Events { inner }
    }
}

impl fmt::Debug for Events<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

impl Stream for Events<'_> {
    type Item = Result<Event>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let inner = self.inner;
        if !inner.pulls() {
            return Poll::Ready(None);
        }
        if let Err(e) = inner.pe().require_outside_callback("comch::Events") {
            return Poll::Ready(Some(Err(e)));
        }
        loop {
            if let Some(event) = inner.try_event() {
                return Poll::Ready(Some(Ok(event)));
            }
            match inner.pe().poll_progressed(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Ok(())) => {}
            }
        }
    }
}
