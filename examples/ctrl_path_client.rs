//! Comch control path, client side: ping-pong with `ctrl_path_server` (or the C server
//! `examples/c/comch_ctrl_server.c`).
//!
//! It connects through a host device to the server of a name, then sends COUNT messages one at
//! a time ("TEXT N" for the N-th), waits for each echo and compares it byte for byte. It prints
//! one summary line and exits 0 only if every echo matched; with no server it gives up after 5 s.
//!
//! ```sh
//! cargo run --release --example ctrl_path_server &
//! cargo run --release --example ctrl_path_client [-- -p b1:00.0 -s NAME -t TEXT -c COUNT]
//! ```

#[path = "support/cli.rs"]
mod cli;

use clap::{Command, value_parser};
use dpakit::ErrorCode;
use dpakit::comch::{Client, Event};
use dpakit::dev::Dev;
use dpakit::pe::Pe;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ECHO_TIMEOUT: Duration = Duration::from_secs(5);

struct Flags {
    pci_addr: String,
    text: String,
    server_name: String,
    count: u32,
}

fn flags() -> Flags {
    let mut m = Command::new("ctrl_path_client")
        .about("Sends Comch messages to a server one at a time and checks each echo")
        .arg(cli::flag(
            "pci-addr",
            'p',
            "PCI_ADDR",
            "b1:00.0",
            "host device to connect through",
        ))
        .arg(cli::flag(
            "text",
            't',
            "TEXT",
            "ping",
            "message text; the N-th message is \"TEXT N\"",
        ))
        .arg(
            cli::flag("count", 'c', "COUNT", "1000", "messages to exchange")
                .value_parser(value_parser!(u32).range(1..)),
        )
        .arg(cli::flag(
            "server-name",
            's',
            "NAME",
            "dpakit_comch_ctrl",
            "name of the server",
        ))
        .get_matches();
    let mut text = |id: &str| m.remove_one::<String>(id).expect("has a default");
    Flags {
        pci_addr: text("pci-addr"),
        text: text("text"),
        server_name: text("server-name"),
        count: m.remove_one("count").expect("has a default"),
    }
}

fn main() -> ExitCode {
    match run(&flags()) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ctrl_path_client: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The ping-pong; how many echoes (or sends) went wrong.
fn run(flags: &Flags) -> Result<u64, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let pe = Pe::new()?;
    // No callbacks: echoes and send completions come as events.
    let client = Client::builder(&dev, &flags.server_name, &pe).start()?;
    // The client connects in the background while it progresses.
    let conn = client
        .connect(CONNECT_TIMEOUT)
        .map_err(|e| match e.code() {
            ErrorCode::TimeOut => format!(
                "no Comch server `{}` answered within {} s on {}: start ctrl_path_server first",
                flags.server_name,
                CONNECT_TIMEOUT.as_secs(),
                flags.pci_addr
            ),
            _ => format!("cannot connect to server `{}`: {e}", flags.server_name),
        })?;
    println!("connected to server `{}`", flags.server_name);

    let (mut mismatches, mut send_errors) = (0u64, 0u64);
    let start = Instant::now();
    for i in 0..flags.count {
        let sent = format!("{} {i}", flags.text).into_bytes();
        client.channel().send(conn, &sent, 0)?;
        let deadline = Instant::now() + ECHO_TIMEOUT;
        // The echo, with send completions and other events on the way. A second echo of one
        // message is compared with the next message, so it counts as a mismatch too.
        loop {
            match client.next_event(deadline.saturating_duration_since(Instant::now()))? {
                Some(Event::Message { msg, .. }) => {
                    mismatches += u64::from(*msg != *sent);
                    break;
                }
                Some(Event::SendDone(done)) if done.status != ErrorCode::Success => {
                    eprintln!("a send failed: {:?}", done.status);
                    send_errors += 1;
                }
                Some(Event::Disconnected { .. }) => {
                    return Err(
                        format!("the server closed the connection after {i} exchanges").into(),
                    );
                }
                Some(_) => {}
                None => {
                    let secs = ECHO_TIMEOUT.as_secs();
                    return Err(format!("no echo of message {i} within {secs} s").into());
                }
            }
        }
    }
    let avg = start.elapsed() / flags.count;
    println!(
        "{} messages, {mismatches} mismatched, average round trip {:.1} µs",
        flags.count,
        avg.as_secs_f64() * 1e6
    );
    // Stopping tells the server; dropping the client destroys it.
    client.stop()?;
    Ok(mismatches + send_errors)
}
