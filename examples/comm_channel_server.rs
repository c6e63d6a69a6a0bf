//! Legacy Comm Channel, service side: the Rust twin of `examples/c/comm_channel_server.c`, the
//! partner of `comm_channel_client` (Rust or C).
//!
//! It listens under a name on the BlueField Arm device and the representor of the client's host
//! function, and answers every message on the connection it came from: with the message itself,
//! or with TEXT when `-t` is given. It exits once it has answered COUNT messages and the client
//! has disconnected (or on Ctrl-C). It never waits on one client: an answer that finds no room
//! waits in a small queue of that client's (past it, it is dropped), and a client whose
//! connection fails is disconnected while the others are served.
//!
//! ```sh
//! cargo run --release --example comm_channel_server [-- -p 03:00.0 -r b1:00.0 -s NAME -t TEXT -c COUNT]
//! ```

#[path = "support/cli.rs"]
mod cli;

use clap::{Command, value_parser};
use dpakit::ErrorCode;
use dpakit::comm_channel::{Endpoint, Event, PeerAddr};
use dpakit::dev::{Dev, DevRep};
use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;
use std::time::Duration;

struct Flags {
    pci_addr: String,
    rep_pci: String,
    name: String,
    text: String,
    count: u64,
}

fn flags() -> Flags {
    let mut m = Command::new("comm_channel_server")
        .about("Answers every Comm Channel message on the connection it came from")
        .arg(cli::flag(
            "pci-addr",
            'p',
            "PCI_ADDR",
            "03:00.0",
            "Arm-side device to listen on",
        ))
        .arg(cli::flag(
            "rep-pci",
            'r',
            "PCI_ADDR",
            "b1:00.0",
            "representor of the client's host function",
        ))
        .arg(cli::flag(
            "service-name",
            's',
            "NAME",
            "dpakit_cc",
            "name the client connects to",
        ))
        .arg(cli::flag(
            "text",
            't',
            "TEXT",
            "",
            "answer every message with this text (default: echo it)",
        ))
        .arg(
            cli::flag(
                "count",
                'c',
                "COUNT",
                "1",
                "exit after answering this many messages, once the client has disconnected",
            )
            .value_parser(value_parser!(u64)),
        )
        .get_matches();
    let mut text = |id: &str| m.remove_one::<String>(id).expect("has a default");
    Flags {
        pci_addr: text("pci-addr"),
        rep_pci: text("rep-pci"),
        name: text("service-name"),
        text: text("text"),
        count: m.remove_one("count").expect("has a default"),
    }
}

fn main() -> ExitCode {
    let flags = flags();
    match serve(&flags) {
        Ok(answered) => {
            println!("comm_channel_server: {answered} messages answered");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("comm_channel_server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Answers kept for one client whose send queue is full; past it answers are dropped.
const BACKLOG: usize = 8;

fn serve(flags: &Flags) -> Result<u64, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let rep = DevRep::open_by_pci(&dev, &flags.rep_pci)?;
    let ep = Endpoint::builder(&dev)
        .representor(&rep)
        .listen(&flags.name)?;
    println!("listening as {}", flags.name);
    let mut buf = vec![0u8; usize::from(ep.max_msg_size()?)];
    // Answers waiting for room, per client: a service never waits on one client.
    let mut backlog: HashMap<PeerAddr, VecDeque<Vec<u8>>> = HashMap::new();
    let (mut answered, mut client_left) = (0u64, false);
    while !(client_left && answered >= flags.count) {
        flush(&ep, &mut backlog, &mut client_left);
        // Wakes up often while answers wait. Ctrl-C ends the wait with SHUTDOWN.
        let wait = if backlog.is_empty() { 200 } else { 10 };
        let received = match ep.recv_timeout(&mut buf, Duration::from_millis(wait)) {
            Err(e) if e.code() == ErrorCode::TimeOut => continue,
            Err(e) if e.code() == ErrorCode::Shutdown => return Err("interrupted".into()),
            other => other?,
        };
        match received {
            Event::Message { len, peer } => {
                let answer = if flags.text.is_empty() {
                    &buf[..len]
                } else {
                    flags.text.as_bytes()
                };
                let waiting = backlog.entry(peer).or_default();
                if !waiting.is_empty() {
                    if waiting.len() < BACKLOG {
                        waiting.push_back(answer.to_vec());
                    } else {
                        println!("a client takes no answers: one dropped");
                    }
                } else {
                    match ep.try_send(peer, answer) {
                        Ok(()) => {}
                        Err(e) if e.code() == ErrorCode::Again => {
                            waiting.push_back(answer.to_vec())
                        }
                        Err(e) => drop_client(&ep, &mut backlog, peer, &e, &mut client_left),
                    }
                }
                answered += 1;
            }
            Event::Reset { peer } => {
                println!("a client disconnected");
                backlog.remove(&peer);
                ep.disconnect(peer)?;
                client_left = true;
            }
        }
        backlog.retain(|_, waiting| !waiting.is_empty());
    }
    Ok(answered)
}

/// Sends what waits for each client while its queue has room.
fn flush(
    ep: &Endpoint,
    backlog: &mut HashMap<PeerAddr, VecDeque<Vec<u8>>>,
    client_left: &mut bool,
) {
    let peers: Vec<PeerAddr> = backlog.keys().copied().collect();
    for peer in peers {
        while let Some(answer) = backlog.get(&peer).and_then(VecDeque::front) {
            match ep.try_send(peer, answer) {
                Ok(()) => {
                    backlog.get_mut(&peer).map(VecDeque::pop_front);
                }
                Err(e) if e.code() == ErrorCode::Again => break,
                Err(e) => {
                    drop_client(ep, backlog, peer, &e, client_left);
                    break;
                }
            }
        }
    }
    backlog.retain(|_, waiting| !waiting.is_empty());
}

/// A client whose connection failed (it left, broke the protocol or took nothing for the
/// stall time): disconnected, and the service goes on with the others.
fn drop_client(
    ep: &Endpoint,
    backlog: &mut HashMap<PeerAddr, VecDeque<Vec<u8>>>,
    peer: PeerAddr,
    why: &dpakit::Error,
    client_left: &mut bool,
) {
    println!("dropping a client: {why}");
    backlog.remove(&peer);
    let _ = ep.disconnect(peer);
    *client_left = true;
}
