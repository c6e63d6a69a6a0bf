//! Comch control path, server side: a ping-pong partner for `ctrl_path_client` (or the C client
//! `examples/c/comch_ctrl_client.c`).
//!
//! It listens under a name on the BlueField Arm device and the representor of the clients' host
//! function, echoes every message back on the connection it came from, and exits once it has
//! echoed COUNT messages and every client has disconnected (or on Ctrl-C, which ends the
//! server's wait for its next event without a signal handler of the example's own).
//!
//! ```sh
//! cargo run --release --example ctrl_path_server [-- -p 03:00.0 -r b1:00.0 -s NAME -c COUNT]
//! ```

#[path = "support/cli.rs"]
mod cli;

use clap::{Command, value_parser};
use dpakit::ErrorCode;
use dpakit::comch::{Event, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::process::ExitCode;
use std::time::Duration;

struct Flags {
    pci_addr: String,
    rep_pci: String,
    server_name: String,
    count: u64,
}

fn flags() -> Flags {
    let mut m = Command::new("ctrl_path_server")
        .about("Echoes every Comch message back to the client that sent it")
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
            "representor of the clients' host function",
        ))
        .arg(cli::flag(
            "server-name",
            's',
            "NAME",
            "dpakit_comch_ctrl",
            "name clients connect to",
        ))
        .arg(
            cli::flag(
                "count",
                'c',
                "COUNT",
                "1000",
                "exit after echoing this many messages, once no client is left",
            )
            .value_parser(value_parser!(u64)),
        )
        .get_matches();
    let mut text = |id: &str| m.remove_one::<String>(id).expect("has a default");
    Flags {
        pci_addr: text("pci-addr"),
        rep_pci: text("rep-pci"),
        server_name: text("server-name"),
        count: m.remove_one("count").expect("has a default"),
    }
}

/// What the server counts.
#[derive(Default)]
struct Stats {
    clients: u32,
    served: u32,
    received: u64,
    echoed: u64,
    send_errors: u64,
}

fn main() -> ExitCode {
    let flags = flags();
    match serve(&flags) {
        Ok(stats) if stats.send_errors == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ctrl_path_server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(flags: &Flags) -> Result<Stats, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let rep = DevRep::open_by_pci(&dev, &flags.rep_pci)?;
    let pe = Pe::new()?;
    // No callbacks: the server hands out its events as values.
    let server = Server::builder(&dev, &rep, &flags.server_name, &pe).start()?;
    println!(
        "server `{}` listening on {} for clients of {}",
        flags.server_name, flags.pci_addr, flags.rep_pci
    );

    let mut s = Stats::default();
    while !(s.echoed >= flags.count && s.served > 0 && s.clients == 0) {
        // Busy for a moment after each event, then asleep on the PE's notification handle.
        let event = match server.next_event(Duration::from_secs(1)) {
            Ok(Some(event)) => event,
            Ok(None) => continue,
            Err(e) if e.code() == ErrorCode::Shutdown => {
                println!("interrupted: stopping");
                break;
            }
            Err(e) => return Err(e.into()),
        };
        match event {
            Event::Connected { .. } => {
                s.clients += 1;
                s.served += 1;
                println!("a client connected ({} connected)", s.clients);
            }
            Event::ConnectFailed { .. } => eprintln!("a client could not connect"),
            Event::Disconnected { .. } => {
                s.clients -= 1;
                println!(
                    "a client disconnected ({} connected, {} messages echoed so far)",
                    s.clients, s.echoed
                );
            }
            // The channel copies the message into a send task of its own.
            Event::Message { conn, msg } => {
                s.received += 1;
                if let Err(e) = server.channel().send(conn, &msg, 0) {
                    eprintln!("cannot send an echo: {e}");
                    s.send_errors += 1;
                }
            }
            Event::SendDone(done) if done.status == ErrorCode::Success => s.echoed += 1,
            Event::SendDone(done) => {
                eprintln!("an echo failed: {:?}", done.status);
                s.send_errors += 1;
            }
            Event::Lagged { dropped } => eprintln!("{dropped} events were lost"),
            _ => {}
        }
    }
    server.stop()?;
    println!(
        "{} client(s) served, {} messages received, {} echoed, {} send errors",
        s.served, s.received, s.echoed, s.send_errors
    );
    Ok(s)
}
