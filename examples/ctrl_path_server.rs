//! Comch control path, server side: a ping-pong partner for `ctrl_path_client` (or the C client
//! `examples/c/comch_ctrl_client.c`).
//!
//! It listens under a name on the BlueField Arm device and the representor of the clients' host
//! function, echoes every message back on the connection it came from, and exits once it has
//! echoed COUNT messages and every client has disconnected (or on Ctrl-C).
//!
//! ```sh
//! cargo run --release --example ctrl_path_server [-- -p 03:00.0 -r b1:00.0 -s NAME -c COUNT]
//! ```

#[path = "support/cli.rs"]
mod cli;
#[path = "support/interrupt.rs"]
mod interrupt;

use clap::{Command, value_parser};
use dpakit::ErrorCode;
use dpakit::comch::Server;
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;
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

/// What the callbacks count.
#[derive(Default)]
struct Stats {
    clients: Cell<u32>,
    served: Cell<u32>,
    received: Cell<u64>,
    echoed: Cell<u64>,
    send_errors: Cell<u64>,
}

fn main() -> ExitCode {
    let flags = flags();
    interrupt::install();
    match serve(&flags) {
        Ok(stats) if stats.send_errors.get() == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ctrl_path_server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(flags: &Flags) -> Result<Rc<Stats>, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let rep = DevRep::open_by_pci(&dev, &flags.rep_pci)?;
    let pe = Pe::new()?;
    let stats = Rc::new(Stats::default());
    let (on_connect, on_disconnect, on_message, on_sent) =
        (stats.clone(), stats.clone(), stats.clone(), stats.clone());
    let server = Server::builder(&dev, &rep, &flags.server_name, &pe)
        .on_connect(move |_, _, ok| {
            if !ok {
                eprintln!("a client could not connect");
                return;
            }
            let s = &on_connect;
            s.clients.set(s.clients.get() + 1);
            s.served.set(s.served.get() + 1);
            println!("a client connected ({} connected)", s.clients.get());
        })
        .on_disconnect(move |_, _, _| {
            let s = &on_disconnect;
            s.clients.set(s.clients.get() - 1);
            println!(
                "a client disconnected ({} connected, {} messages echoed so far)",
                s.clients.get(),
                s.echoed.get()
            );
        })
        // The channel copies the message into a send task of its own, so the echo outlives
        // the receive buffer.
        .on_message(move |ch, conn, msg| {
            let s = &on_message;
            s.received.set(s.received.get() + 1);
            if let Err(e) = ch.send(conn, msg, 0) {
                eprintln!("cannot send an echo: {e}");
                s.send_errors.set(s.send_errors.get() + 1);
            }
        })
        .on_send_complete(move |_, done| {
            let s = &on_sent;
            if done.status == ErrorCode::Success {
                s.echoed.set(s.echoed.get() + 1);
            } else {
                eprintln!("an echo failed: {:?}", done.status);
                s.send_errors.set(s.send_errors.get() + 1);
            }
        })
        .start()?;
    println!(
        "server `{}` listening on {} for clients of {}",
        flags.server_name, flags.pci_addr, flags.rep_pci
    );

    let finished =
        || stats.echoed.get() >= flags.count && stats.served.get() > 0 && stats.clients.get() == 0;
    while !finished() && !interrupt::interrupted() {
        // Busy for a moment after each event, then asleep on the notification handle; the
        // timeout only bounds how long a signal may wait to be noticed.
        match pe.progress_until(Duration::from_millis(100), || {
            finished() || interrupt::interrupted()
        }) {
            // A signal may cut the wait short with an error; the flag is what counts then.
            Err(e) if e.code() != ErrorCode::TimeOut && !interrupt::interrupted() => {
                return Err(e.into());
            }
            _ => {}
        }
    }
    if interrupt::interrupted() {
        println!("interrupted: stopping");
    }
    server.stop()?;
    println!(
        "{} client(s) served, {} messages received, {} echoed, {} send errors",
        stats.served.get(),
        stats.received.get(),
        stats.echoed.get(),
        stats.send_errors.get()
    );
    Ok(stats)
}
