//! Async Comch on a tokio current-thread runtime (feature `tokio`): a server (its events a
//! `Stream`) and many clients (`next_event_async`) as tasks of one thread, each on its own PE
//! sleeping in the reactor; an idle wait costs no CPU.

use dpakit::comch::{Client, ClientEvent, Server, ServerEvent};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use futures_core::Stream;
use std::pin::Pin;
use std::time::Duration;
use tokio::task::{LocalSet, spawn_local};
use tokio::time::timeout;

const ARM: &str = "0000:03:00.0";
const HOST: &str = "0000:b1:00.0";
const WAIT: Duration = Duration::from_secs(10);

fn private_runtime_dir() {
    let dir = std::env::temp_dir().join(format!("dpakit-async-{}", std::process::id()));
    // SAFETY: set before any thread of this test binary reads it (every test sets the same).
    unsafe { std::env::set_var("DPAKIT_SOFT_RUNTIME_DIR", &dir) };
}

/// The stream's next item (what `StreamExt::next` does).
async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn one_server_serves_a_hundred_concurrent_clients() {
    private_runtime_dir();
    const CLIENTS: u32 = 100;
    const MESSAGES: u32 = 10;
    runtime().block_on(LocalSet::new().run_until(async {
        let arm = Dev::open_by_pci(ARM).unwrap();
        let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
        let host = Dev::open_by_pci(HOST).unwrap();
        let pe = Pe::new().unwrap();
        let server = Server::builder(&arm, &rep, "async-hundred", &pe)
            .num_send_tasks(2 * CLIENTS)
            .start()
            .unwrap();
        let serving = spawn_local(async move {
            let (mut connected, mut left, mut echoed) = (0, 0, 0);
            let mut events = server.events();
            while left < CLIENTS {
                let event = timeout(WAIT, next(&mut events)).await;
                let event = event.expect("the server hears from its clients");
                match event.expect("the stream goes on").unwrap() {
                    ServerEvent::Connected { .. } => connected += 1,
                    ServerEvent::Message { conn, msg } => {
                        server.channel().send(conn, &msg, 0).unwrap()
                    }
                    ServerEvent::SendDone(done) => {
                        assert_eq!(done.status, dpakit::ErrorCode::Success);
                        echoed += 1;
                    }
                    ServerEvent::Disconnected { .. } => left += 1,
                    other => panic!("unexpected {other:?}"),
                }
            }
            server.stop().unwrap();
            (connected, echoed)
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|id| {
                let host = host.clone();
                spawn_local(async move {
                    let pe = Pe::new().unwrap();
                    let client = Client::builder(&host, "async-hundred", &pe)
                        .start()
                        .unwrap();
                    let conn = timeout(WAIT, client.connect_async())
                        .await
                        .expect("connects")
                        .unwrap();
                    for i in 0..MESSAGES {
                        let sent = format!("{id}/{i}");
                        client.channel().send(conn, sent.as_bytes(), 0).unwrap();
                        loop {
                            let event = timeout(WAIT, client.next_event_async()).await;
                            match event.expect("the echo comes").unwrap() {
                                ClientEvent::Message { msg, .. } => {
                                    assert_eq!(*msg, *sent.as_bytes(), "client {id}");
                                    break;
                                }
                                ClientEvent::SendDone(_) => {}
                                other => panic!("client {id}: unexpected {other:?}"),
                            }
                        }
                    }
                    client.stop().unwrap();
                })
            })
            .collect();
        for c in clients {
            c.await.unwrap();
        }
        let (connected, echoed) = serving.await.unwrap();
        assert_eq!(connected, CLIENTS);
        assert_eq!(echoed, u64::from(CLIENTS * MESSAGES));
    }));
}

/// CPU time this thread has used (the runtime runs on it; other tests run on theirs).
fn cpu_time() -> Duration {
    // SAFETY: a zeroed rusage for getrusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[test]
fn an_idle_async_wait_sleeps_in_the_reactor() {
    private_runtime_dir();
    runtime().block_on(LocalSet::new().run_until(async {
        let arm = Dev::open_by_pci(ARM).unwrap();
        let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
        let pe = Pe::new().unwrap();
        let server = Server::builder(&arm, &rep, "async-idle", &pe)
            .start()
            .unwrap();
        let before = cpu_time();
        let waited = timeout(Duration::from_millis(500), server.next_event_async()).await;
        let used = cpu_time() - before;
        assert!(waited.is_err(), "no client, no event");
        // A busy poll would use the whole half second; a sleeping wait next to nothing.
        assert!(
            used < Duration::from_millis(150),
            "{used:?} of CPU while idle"
        );
        // An event still wakes the task.
        let host = Dev::open_by_pci(HOST).unwrap();
        let cpe = Pe::new().unwrap();
        let client = Client::builder(&host, "async-idle", &cpe).start().unwrap();
        let connecting = spawn_local(async move {
            let conn = client.connect_async().await.unwrap();
            client.channel().send(conn, b"hello", 0).unwrap();
            client
        });
        loop {
            match timeout(WAIT, server.next_event_async())
                .await
                .unwrap()
                .unwrap()
            {
                ServerEvent::Message { msg, .. } => {
                    assert_eq!(&*msg, b"hello");
                    break;
                }
                ServerEvent::Connected { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        drop(connecting.await.unwrap());
    }));
}

/// An endpoint with callbacks queues nothing: its stream ends at once rather than waiting
/// forever for events that go to the callbacks.
#[test]
fn the_event_stream_of_an_endpoint_with_callbacks_is_empty() {
    private_runtime_dir();
    runtime().block_on(async {
        let arm = Dev::open_by_pci(ARM).unwrap();
        let rep = DevRep::open_by_pci(&arm, HOST).unwrap();
        let pe = Pe::new().unwrap();
        let server = Server::builder(&arm, &rep, "async-callbacks", &pe)
            .on_message(|_, _, _| {})
            .start()
            .unwrap();
        assert!(next(&mut server.events()).await.is_none());
        server.stop().unwrap();
    });
}
