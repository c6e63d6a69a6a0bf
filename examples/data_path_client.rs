//! Comch fast path, client side: an echo over producers and consumers with `data_path_server`
//! (or the C server `examples/c/comch_data_server.c`).
//!
//! It connects through a host device to the server of a name, then puts a consumer and a
//! producer on the connection. Once the server has announced its consumer, it sends COUNT
//! messages of SIZE bytes one at a time (the bytes derived from the message number, the number
//! in the immediate data), waits for each echo on its consumer and checks it byte for byte. It
//! prints one summary line and exits 0 only if every echo matched; with no server it gives up
//! after 5 s.
//!
//! ```sh
//! cargo run --release --example data_path_server &
//! cargo run --release --example data_path_client [-- -p b1:00.0 -s NAME -c COUNT -b SIZE]
//! ```

#[path = "support/cli.rs"]
mod cli;

use clap::{Command, value_parser};
use dpakit::ErrorCode;
use dpakit::comch::{Client, Consumer, Producer};
use dpakit::ctx::CtxState;
use dpakit::dev::Dev;
use dpakit::pe::Pe;
use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ECHO_TIMEOUT: Duration = Duration::from_secs(5);
/// Receives the consumer keeps posted.
const NUM_RECV: u32 = 4;
const MAX_MSG_SIZE: i64 = 1 << 20;

struct Flags {
    pci_addr: String,
    server_name: String,
    count: u32,
    size: usize,
}

fn flags() -> Flags {
    let mut m = Command::new("data_path_client")
        .about("Sends messages through a Comch producer one at a time and checks each echo")
        .arg(cli::flag(
            "pci-addr",
            'p',
            "PCI_ADDR",
            "b1:00.0",
            "host device to connect through",
        ))
        .arg(cli::flag(
            "server-name",
            's',
            "NAME",
            "dpakit_comch_data",
            "name of the server",
        ))
        .arg(
            cli::flag("count", 'c', "COUNT", "1000", "messages to exchange")
                .value_parser(value_parser!(u32).range(1..)),
        )
        .arg(
            cli::flag(
                "size",
                'b',
                "BYTES",
                "4096",
                "bytes per message, at most 1 MiB; the server's -b must be as large",
            )
            .value_parser(value_parser!(u32).range(1..=MAX_MSG_SIZE)),
        )
        .get_matches();
    let mut text = |id: &str| m.remove_one::<String>(id).expect("has a default");
    Flags {
        pci_addr: text("pci-addr"),
        server_name: text("server-name"),
        count: m.remove_one("count").expect("has a default"),
        size: m.remove_one::<u32>("size").expect("has a default") as usize,
    }
}

/// Byte `i` of message `n`; the C client uses the same rule.
fn pattern(n: u64, i: usize) -> u8 {
    let i = i as u64;
    n.wrapping_mul(7)
        .wrapping_add(i)
        .wrapping_add((i >> 8) * 13) as u8
}

/// What the callbacks record.
#[derive(Default)]
struct Exchange {
    /// The server's consumer, once announced, and whether it expired since.
    peer: Cell<Option<u32>>,
    peer_gone: Cell<bool>,
    /// Echoes received: the number of the one due next.
    echoes: Cell<u64>,
    mismatches: Cell<u64>,
    send_errors: Cell<u64>,
}

fn main() -> ExitCode {
    match run(&flags()) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("data_path_client: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The echo; how many echoes (or sends) went wrong.
fn run(flags: &Flags) -> Result<u64, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let pe = Pe::new()?;
    let x = Rc::new(Exchange::default());
    let (on_consumer, on_echo, on_sent) = (x.clone(), x.clone(), x.clone());
    let client = Client::builder(&dev, &flags.server_name, &pe)
        .on_consumer(move |_, _, id, created| {
            // The server puts one consumer on the connection: the first is the one to send to.
            match (created, on_consumer.peer.get()) {
                (true, None) => on_consumer.peer.set(Some(id)),
                (false, Some(peer)) if peer == id => on_consumer.peer_gone.set(true),
                _ => {}
            }
        })
        .start()?;
    // The client connects in the background while it progresses.
    let conn = client
        .connect(CONNECT_TIMEOUT)
        .map_err(|e| match e.code() {
            ErrorCode::TimeOut => format!(
                "no Comch server `{}` answered within {} s on {}: start data_path_server first",
                flags.server_name,
                CONNECT_TIMEOUT.as_secs(),
                flags.pci_addr
            ),
            _ => format!("cannot connect to server `{}`: {e}", flags.server_name),
        })?;
    println!("connected to server `{}`", flags.server_name);

    let size = flags.size;
    let consumer = Consumer::builder(conn, &dev, &pe)
        .num_recv(NUM_RECV)
        .buf_size(size)
        .imm_data_len(8)
        .on_recv(move |r| {
            // The echo due next, carrying its own number: anything else is a mismatch.
            let n = on_echo.echoes.get();
            let intact = r.imm == n.to_le_bytes()
                && r.data.len() == size
                && r.data.iter().enumerate().all(|(i, &b)| b == pattern(n, i));
            if !intact {
                on_echo.mismatches.set(on_echo.mismatches.get() + 1);
            }
            on_echo.echoes.set(n + 1);
        })
        .start()?;
    let producer = Producer::builder(conn, &dev, &pe)
        .num_send(1)
        .buf_size(size)
        .on_send_complete(move |done| {
            if done.status == ErrorCode::Success {
                return;
            }
            on_sent.send_errors.set(on_sent.send_errors.get() + 1);
            if done.status == ErrorCode::InvalidValue {
                eprintln!(
                    "message {} does not fit the server's receive buffers: give the server -b {size}",
                    done.user_data
                );
            } else {
                eprintln!("message {} failed: {:?}", done.user_data, done.status);
            }
        })
        .start()?;

    // The server answers our consumer with its own; only then is there somewhere to send.
    let running = || client.state().is_ok_and(|s| s == CtxState::Running);
    if !busy_progress(&pe, CONNECT_TIMEOUT, || {
        x.peer.get().is_some() || !running()
    }) || x.peer.get().is_none()
    {
        return Err(format!(
            "server `{}` put no consumer on the connection within {} s: is it data_path_server?",
            flags.server_name,
            CONNECT_TIMEOUT.as_secs()
        )
        .into());
    }
    let peer = x.peer.get().expect("announced");

    let start = Instant::now();
    for n in 0..u64::from(flags.count) {
        let mut loan = producer.loan(size)?;
        for (i, b) in loan.as_mut_slice().iter_mut().enumerate() {
            *b = pattern(n, i);
        }
        loan.send(peer, &n.to_le_bytes(), n)?;
        // The echo is back and the send complete (its buffer free again), or something broke.
        let over = || {
            (x.echoes.get() > n && producer.in_flight() == 0)
                || x.send_errors.get() > 0
                || x.peer_gone.get()
                || !running()
        };
        if !busy_progress(&pe, ECHO_TIMEOUT, over) {
            let secs = ECHO_TIMEOUT.as_secs();
            return Err(format!("no echo of message {n} within {secs} s").into());
        }
        if x.send_errors.get() > 0 {
            return Err(format!("message {n} was not delivered").into());
        }
        if x.peer_gone.get() || !running() {
            return Err(format!("the server left after {} echoes", x.echoes.get()).into());
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "{} messages of {size} bytes, {} mismatched, average round trip {:.1} µs, {:.1} MB/s each way",
        flags.count,
        x.mismatches.get(),
        elapsed * 1e6 / f64::from(flags.count),
        f64::from(flags.count) * size as f64 / elapsed / 1e6
    );
    // DOCA's order: the producer, then the consumer, then the connection (the server is told).
    producer.stop()?;
    consumer.stop()?;
    drop((producer, consumer));
    client.stop()?;
    Ok(x.mismatches.get() + x.send_errors.get())
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
