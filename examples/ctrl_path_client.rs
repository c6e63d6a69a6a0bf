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
use dpakit::comch::Client;
use dpakit::ctx::CtxState;
use dpakit::dev::Dev;
use dpakit::pe::Pe;
use std::cell::{Cell, RefCell};
use std::process::ExitCode;
use std::rc::Rc;
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

/// The exchange in progress, as the receive callback sees it.
#[derive(Default)]
struct Exchange {
    /// The message in flight, which its echo must equal.
    sent: RefCell<Vec<u8>>,
    echoed: Cell<bool>,
    mismatches: Cell<u64>,
    send_errors: Cell<u64>,
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
    let exchange = Rc::new(Exchange::default());
    let (on_echo, on_sent) = (exchange.clone(), exchange.clone());
    let client = Client::builder(&dev, &flags.server_name, &pe)
        .on_message(move |_, _, msg| {
            let x = &on_echo;
            // A second echo of one message counts as a mismatch too.
            if x.echoed.get() || msg != x.sent.borrow().as_slice() {
                x.mismatches.set(x.mismatches.get() + 1);
            }
            x.echoed.set(true);
        })
        .on_send_complete(move |_, done| {
            if done.status != ErrorCode::Success {
                eprintln!("a send failed: {:?}", done.status);
                on_sent.send_errors.set(on_sent.send_errors.get() + 1);
            }
        })
        .start()?;
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

    let start = Instant::now();
    for i in 0..flags.count {
        let msg = format!("{} {i}", flags.text).into_bytes();
        client.channel().send(conn, &msg, 0)?;
        *exchange.sent.borrow_mut() = msg;
        exchange.echoed.set(false);
        let running = || client.state().is_ok_and(|s| s == CtxState::Running);
        if !busy_progress(&pe, ECHO_TIMEOUT, || exchange.echoed.get() || !running()) {
            let secs = ECHO_TIMEOUT.as_secs();
            return Err(format!("no echo of message {i} within {secs} s").into());
        }
        if !running() {
            return Err(format!("the server closed the connection after {i} exchanges").into());
        }
    }
    let avg = start.elapsed() / flags.count;
    println!(
        "{} messages, {} mismatched, average round trip {:.1} µs",
        flags.count,
        exchange.mismatches.get(),
        avg.as_secs_f64() * 1e6
    );
    // Stopping tells the server; dropping the client destroys it.
    client.stop()?;
    Ok(exchange.mismatches.get() + exchange.send_errors.get())
}

/// Progresses until `done()` holds; false after `timeout`. Busy, because an echo comes back
/// within microseconds, sooner than a sleep on the notification handle would end.
fn busy_progress(pe: &Pe, timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !done() {
        if !pe.progress() && Instant::now() > deadline {
            return false;
        }
    }
    true
}
