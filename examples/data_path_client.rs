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
use dpakit::comch::{Client, ClientEvent, Consumer, Producer};
use dpakit::ctx::CtxState;
use dpakit::dev::Dev;
use dpakit::pe::Pe;
use std::process::ExitCode;
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

/// The echo; how many echoes went wrong.
fn run(flags: &Flags) -> Result<u64, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let pe = Pe::new()?;
    // No callbacks anywhere: the client's events, the received buffers and the failed sends are
    // values the loop below takes.
    let client = Client::builder(&dev, &flags.server_name, &pe).start()?;
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
        .start()?;
    let producer = Producer::builder(conn, &dev, &pe)
        .num_send(1)
        .buf_size(size)
        .start()?;

    // The server answers our consumer with its own; only then is there somewhere to send. It
    // puts one consumer on the connection: the first is the one to send to.
    let peer = loop {
        match client.next_event(CONNECT_TIMEOUT)? {
            Some(ClientEvent::ConsumerNew { id, .. }) => break id,
            Some(_) => {}
            None => {
                return Err(format!(
                    "server `{}` put no consumer on the connection within {} s: is it \
                     data_path_server?",
                    flags.server_name,
                    CONNECT_TIMEOUT.as_secs()
                )
                .into());
            }
        }
    };

    let (mut echoes, mut mismatches) = (0u64, 0u64);
    let start = Instant::now();
    for n in 0..u64::from(flags.count) {
        let mut loan = producer.loan(size)?;
        for (i, b) in loan.as_mut_slice().iter_mut().enumerate() {
            *b = pattern(n, i);
        }
        loan.send(peer, &n.to_le_bytes(), n)?;
        // Busy until the echo is back and the send complete (its buffer free again), or
        // something broke: an echo comes back within microseconds, sooner than a sleep ends.
        let deadline = Instant::now() + ECHO_TIMEOUT;
        let mut passes = 0u32;
        while echoes <= n || producer.in_flight() > 0 {
            pe.progress();
            if let Some(echo) = consumer.try_recv() {
                // The echo due next, carrying its own number: anything else is a mismatch.
                let intact = echo.imm() == echoes.to_le_bytes()
                    && echo.data().len() == size
                    && echo
                        .data()
                        .iter()
                        .enumerate()
                        .all(|(i, &b)| b == pattern(echoes, i));
                mismatches += u64::from(!intact);
                echoes += 1;
            }
            while let Some(event) = client.try_event() {
                if matches!(event, ClientEvent::ConsumerExpired { id, .. } if id == peer) {
                    return Err(format!("the server left after {echoes} echoes").into());
                }
            }
            if producer.failed_sends() > 0 {
                return Err(format!(
                    "message {n} was not delivered (does it fit the server's receive buffers? \
                     give the server -b {size})"
                )
                .into());
            }
            passes += 1;
            if passes % 1024 == 0 {
                if client.state()? != CtxState::Running {
                    return Err(format!("the server left after {echoes} echoes").into());
                }
                if Instant::now() > deadline {
                    let secs = ECHO_TIMEOUT.as_secs();
                    return Err(format!("no echo of message {n} within {secs} s").into());
                }
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "{} messages of {size} bytes, {mismatches} mismatched, average round trip {:.1} µs, \
         {:.1} MB/s each way",
        flags.count,
        elapsed * 1e6 / f64::from(flags.count),
        f64::from(flags.count) * size as f64 / elapsed / 1e6
    );
    // DOCA's order: the producer, then the consumer, then the connection (the server is told).
    producer.stop()?;
    consumer.stop()?;
    drop((producer, consumer));
    client.stop()?;
    Ok(mismatches)
}
