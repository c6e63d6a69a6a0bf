//! Legacy Comm Channel, client side: the Rust twin of `examples/c/comm_channel_client.c`, the
//! partner of `comm_channel_server` (Rust or C).
//!
//! It connects through a host device to the service of a name, sends COUNT messages one at a
//! time (`"TEXT #n"`) and waits for each answer; with an echoing service it checks every answer
//! byte for byte. At the end it checks the connection's statistics, prints one line and
//! disconnects; the exit status says whether everything matched.
//!
//! ```sh
//! cargo run --release --example comm_channel_client [-- -p b1:00.0 -s NAME -t TEXT -c COUNT]
//! ```

#[path = "support/cli.rs"]
mod cli;

use clap::{Command, value_parser};
use dpakit::comm_channel::{Endpoint, Event};
use dpakit::dev::Dev;
use std::process::ExitCode;
use std::time::Duration;

struct Flags {
    pci_addr: String,
    name: String,
    text: String,
    count: u64,
}

fn flags() -> Flags {
    let mut m = Command::new("comm_channel_client")
        .about("Sends Comm Channel messages to a service and checks its answers")
        .arg(cli::flag(
            "pci-addr",
            'p',
            "PCI_ADDR",
            "b1:00.0",
            "host device to connect through",
        ))
        .arg(cli::flag(
            "service-name",
            's',
            "NAME",
            "dpakit_cc",
            "service to connect to",
        ))
        .arg(cli::flag(
            "text",
            't',
            "TEXT",
            "hello from the host",
            "text of the messages",
        ))
        .arg(
            cli::flag("count", 'c', "COUNT", "1", "messages to send")
                .value_parser(value_parser!(u64).range(1..)),
        )
        .get_matches();
    let mut text = |id: &str| m.remove_one::<String>(id).expect("has a default");
    Flags {
        pci_addr: text("pci-addr"),
        name: text("service-name"),
        text: text("text"),
        count: m.remove_one("count").expect("has a default"),
    }
}

fn main() -> ExitCode {
    match exchange(&flags()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("comm_channel_client: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether every exchange and the statistics matched.
fn exchange(flags: &Flags) -> Result<bool, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let (ep, peer) = Endpoint::builder(&dev).connect(&flags.name, Duration::from_secs(5))?;
    let mut answer = vec![0u8; usize::from(ep.max_msg_size()?)];
    let (mut echoed, mut sent_bytes) = (0u64, 0u64);
    for i in 0..flags.count {
        // NUL-terminated, as the C twin sends it.
        let msg = format!("{} #{i}\0", flags.text);
        ep.send(peer, msg.as_bytes())?;
        sent_bytes += msg.len() as u64;
        match ep.recv_timeout(&mut answer, Duration::from_secs(10))? {
            Event::Message { len, peer: from } if from == peer => {
                echoed += u64::from(&answer[..len] == msg.as_bytes());
            }
            Event::Message { .. } => return Err("an answer from another connection".into()),
            Event::Reset { .. } => return Err("the service went away".into()),
        }
    }
    let stats = ep.stats(peer)?;
    let matched = (stats.send_messages, stats.send_bytes, stats.recv_messages)
        == (flags.count, sent_bytes, flags.count)
        && stats.send_in_flight_messages == 0;
    if !matched {
        eprintln!(
            "comm_channel_client: statistics {stats:?} after {} exchanges",
            flags.count
        );
    }
    println!(
        "comm_channel_client: {} messages answered, {echoed} echoed byte for byte",
        flags.count
    );
    ep.disconnect(peer)?;
    Ok(matched)
}
