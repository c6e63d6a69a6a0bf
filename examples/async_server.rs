//! One Arm-side Comch server serving many host clients at once, all of them async tasks on one
//! thread (feature `tokio`): each endpoint hands out its events as values, and each task sleeps
//! in tokio's reactor on its progress engine's notification handle while it waits.
//!
//! The server echoes every message; each client connects, sends MESSAGES messages one at a
//! time, checks every echo and disconnects. The example exits 0 once every client is done and
//! every echo matched.
//!
//! ```sh
//! cargo run --release --features tokio --example async_server [-- CLIENTS MESSAGES]
//! ```

use dpakit::comch::{Client, ClientEvent, Server, ServerEvent};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use dpakit::{ErrorCode, Result};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tokio::task::{LocalSet, spawn_local};
use tokio::time::timeout;

const NAME: &str = "dpakit_async_echo";
/// A bound on every wait, so a lost message fails the run instead of hanging it.
const WAIT: Duration = Duration::from_secs(10);

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u32>());
    let clients = args.next().unwrap_or(Ok(100));
    let messages = args.next().unwrap_or(Ok(20));
    let (Ok(clients), Ok(messages)) = (clients, messages) else {
        eprintln!("usage: async_server [CLIENTS [MESSAGES]]");
        return ExitCode::FAILURE;
    };
    // The PEs and endpoints are not Send: the tasks stay on this thread.
    match LocalSet::new().run_until(run(clients, messages)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("async_server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(clients: u32, messages: u32) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let arm = Dev::open_by_pci("03:00.0")?;
    let rep = DevRep::open_by_pci(&arm, "b1:00.0")?;
    let host = Dev::open_by_pci("b1:00.0")?;
    let pe = Pe::new()?;
    // Room for an echo to every client at once.
    let server = Server::builder(&arm, &rep, NAME, &pe)
        .num_send_tasks(clients.max(1) * 2)
        .start()?;
    let started = Instant::now();
    let serving = spawn_local(serve(server, clients));
    let tasks: Vec<_> = (0..clients)
        .map(|id| spawn_local(client(host.clone(), id, messages)))
        .collect();
    let mut failed = 0;
    for task in tasks {
        if let Err(e) = task.await? {
            eprintln!("{e}");
            failed += 1;
        }
    }
    let echoed = serving.await??;
    println!(
        "{clients} clients, {echoed} messages echoed in {:.1} ms, {failed} client(s) failed",
        started.elapsed().as_secs_f64() * 1e3
    );
    if failed > 0 {
        return Err(format!("{failed} client(s) failed").into());
    }
    Ok(())
}

/// Echoes until `clients` clients have come and gone; returns the messages echoed.
async fn serve(server: Server, clients: u32) -> Result<u64> {
    let (mut left, mut echoed) = (0, 0u64);
    while left < clients {
        match timeout(WAIT, server.next_event_async()).await {
            Ok(event) => match event? {
                ServerEvent::Message { conn, msg } => server.channel().send(conn, &msg, 0)?,
                ServerEvent::SendDone(done) if done.status == ErrorCode::Success => echoed += 1,
                ServerEvent::SendDone(done) => eprintln!("an echo failed: {:?}", done.status),
                ServerEvent::Disconnected { .. } => left += 1,
                _ => {}
            },
            Err(_) => return Err(stuck("the server", WAIT)),
        }
    }
    server.stop()?;
    Ok(echoed)
}

/// One client on a progress engine of its own: connects, sends `messages` messages one at a
/// time and checks each echo.
async fn client(host: Dev, id: u32, messages: u32) -> Result<()> {
    let pe = Pe::new()?;
    let client = Client::builder(&host, NAME, &pe).start()?;
    let conn = timeout(WAIT, client.connect_async())
        .await
        .map_err(|_| stuck(&format!("client {id} connecting"), WAIT))??;
    for i in 0..messages {
        let sent = format!("client {id} message {i}");
        client.channel().send(conn, sent.as_bytes(), 0)?;
        loop {
            let event = timeout(WAIT, client.next_event_async())
                .await
                .map_err(|_| stuck(&format!("client {id} awaiting echo {i}"), WAIT))??;
            match event {
                ClientEvent::Message { msg, .. } if *msg == *sent.as_bytes() => break,
                ClientEvent::Message { msg, .. } => {
                    return Err(dpakit::Error::new(
                        ErrorCode::Unexpected,
                        format!(
                            "client {id}: echo {i} was {:?}",
                            String::from_utf8_lossy(&msg)
                        ),
                    ));
                }
                ClientEvent::Disconnected { .. } => {
                    return Err(dpakit::Error::new(
                        ErrorCode::NotConnected,
                        format!("client {id}: the server left after {i} echoes"),
                    ));
                }
                _ => {}
            }
        }
    }
    client.stop()
}

fn stuck(what: &str, wait: Duration) -> dpakit::Error {
    dpakit::Error::new(
        ErrorCode::TimeOut,
        format!("{what}: nothing within {wait:?}"),
    )
}
