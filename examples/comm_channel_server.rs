//! Legacy Comm Channel, service side: the Rust twin of `examples/c/comm_channel_server.c`, the
//! partner of `comm_channel_client` (Rust or C).
//!
//! It listens under a name on the BlueField Arm device and the representor of the client's host
//! function, and answers every message on the connection it came from: with the message itself,
//! or with TEXT when `-t` is given. It exits once it has answered COUNT messages and the client
//! has disconnected (or on Ctrl-C).
//!
//! ```sh
//! cargo run --release --example comm_channel_server [-- -p 03:00.0 -r b1:00.0 -s NAME -t TEXT -c COUNT]
//! ```

#[path = "support/cli.rs"]
mod cli;
#[path = "support/interrupt.rs"]
mod interrupt;

use clap::{Command, value_parser};
use dpakit::ErrorCode;
use dpakit::comm_channel::{Endpoint, Received};
use dpakit::dev::{Dev, DevRep};
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
    interrupt::install();
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

fn serve(flags: &Flags) -> Result<u64, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let rep = DevRep::open_by_pci(&dev, &flags.rep_pci)?;
    let ep = Endpoint::builder(&dev)
        .representor(&rep)
        .listen(&flags.name)?;
    println!("listening as {}", flags.name);
    let mut buf = vec![0u8; usize::from(ep.max_msg_size()?)];
    let (mut answered, mut client_left) = (0u64, false);
    while !(client_left && answered >= flags.count) {
        if interrupt::interrupted() {
            return Err("interrupted".into());
        }
        // Wakes up now and then to look at the interrupt flag.
        let received = match ep.recv_timeout(&mut buf, Duration::from_millis(200)) {
            Err(e) if e.code() == ErrorCode::TimeOut => continue,
            other => other?,
        };
        match received {
            Received::Message { len, peer } => {
                let answer = if flags.text.is_empty() {
                    &buf[..len]
                } else {
                    flags.text.as_bytes()
                };
                ep.send(peer, answer)?;
                answered += 1;
            }
            Received::Reset { peer } => {
                println!("a client disconnected");
                ep.disconnect(peer)?;
                client_left = true;
            }
        }
    }
    Ok(answered)
}
