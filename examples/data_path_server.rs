//! Comch fast path, server side: the echo partner of `data_path_client` (or the C client
//! `examples/c/comch_data_client.c`).
//!
//! It listens under a name on the BlueField Arm device and the representor of the clients' host
//! function. Once a client has put its consumer on the connection, the server puts a consumer
//! and a producer of its own there and echoes every message its consumer receives back to the
//! client's consumer, bytes and immediate data alike. It exits once it has echoed COUNT messages
//! and every client has disconnected (or on Ctrl-C, which ends its wait on the progress
//! engine: no signal handler of its own). Its endpoints have no callbacks: the server's events,
//! the received buffers and the failed sends are all values the main loop takes.
//!
//! ```sh
//! cargo run --release --example data_path_server [-- -p 03:00.0 -r b1:00.0 -s NAME -c COUNT -b SIZE]
//! ```

#[path = "support/cli.rs"]
mod cli;

use clap::{Command, value_parser};
use dpakit::comch::{Connection, Consumer, Producer, Server, ServerEvent};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use dpakit::{ErrorCode, Result};
use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;
use std::time::Duration;

/// Per client: receives posted, and sends in flight.
const NUM_BUFS: u32 = 16;
const MAX_MSG_SIZE: i64 = 1 << 20;

struct Flags {
    pci_addr: String,
    rep_pci: String,
    server_name: String,
    count: u64,
    size: usize,
}

fn flags() -> Flags {
    let mut m = Command::new("data_path_server")
        .about("Echoes every message a client's producer sends back to the client's consumer")
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
            "dpakit_comch_data",
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
        .arg(
            cli::flag(
                "size",
                'b',
                "BYTES",
                "4096",
                "largest message echoed, at most 1 MiB; at least the clients' -b",
            )
            .value_parser(value_parser!(u32).range(1..=MAX_MSG_SIZE)),
        )
        .get_matches();
    let mut text = |id: &str| m.remove_one::<String>(id).expect("has a default");
    Flags {
        pci_addr: text("pci-addr"),
        rep_pci: text("rep-pci"),
        server_name: text("server-name"),
        count: m.remove_one("count").expect("has a default"),
        size: m.remove_one::<u32>("size").expect("has a default") as usize,
    }
}

/// What the server counts.
#[derive(Default)]
struct Stats {
    clients: u32,
    served: u32,
    received: u64,
    echoed: u64,
    errors: u64,
}

impl Stats {
    fn error(&mut self, what: impl std::fmt::Display) {
        eprintln!("{what}");
        self.errors += 1;
    }
}

/// Our producer and consumer on a client's connection, and the echoes that wait for a send
/// buffer.
struct FastPath {
    producer: Producer,
    consumer: Consumer,
    /// The client's consumer.
    peer: u32,
    /// Messages that found every send buffer in flight, sent once one is free. A client that
    /// waits for each echo never fills it.
    backlog: VecDeque<(Vec<u8>, Vec<u8>)>,
}

impl FastPath {
    fn start(conn: Connection, peer: u32, dev: &Dev, pe: &Pe, size: usize) -> Result<FastPath> {
        // The producer first: an echo may be due as soon as the client sees our consumer.
        // Neither has a callback: received buffers are taken from the consumer, and failed
        // sends are counted by the producer.
        let producer = Producer::builder(conn, dev, pe)
            .num_send(NUM_BUFS)
            .buf_size(size)
            .start()?;
        let consumer = Consumer::builder(conn, dev, pe)
            .num_recv(NUM_BUFS)
            .buf_size(size)
            .start()?;
        Ok(FastPath {
            producer,
            consumer,
            peer,
            backlog: VecDeque::new(),
        })
    }

    /// Copies a message into a loaned send buffer and sends it; `false` if none is free.
    fn send(&self, data: &[u8], imm: &[u8], stats: &mut Stats) -> bool {
        match self.producer.loan(data.len()) {
            Ok(mut loan) => {
                loan.as_mut_slice().copy_from_slice(data);
                match loan.send(self.peer, imm, 0) {
                    Ok(()) => stats.echoed += 1,
                    Err(e) => stats.error(format!("cannot send an echo: {e}")),
                }
                true
            }
            Err(e) if e.code() == ErrorCode::NoMemory => false,
            Err(e) => {
                stats.error(format!("cannot loan a buffer for an echo: {e}"));
                true
            }
        }
    }

    /// Sends what waited, then echoes what arrived, in order; whether anything happened. A
    /// received buffer is posted again when its sample drops, so what cannot be sent at once
    /// is copied into the backlog.
    fn pump(&mut self, stats: &mut Stats) -> bool {
        let mut busy = false;
        while let Some((data, imm)) = self.backlog.pop_front() {
            if !self.send(&data, &imm, stats) {
                self.backlog.push_front((data, imm));
                return busy;
            }
            busy = true;
        }
        while let Some(sample) = self.consumer.try_recv() {
            busy = true;
            stats.received += 1;
            if self.backlog.is_empty() && self.send(sample.data(), sample.imm(), stats) {
                continue;
            }
            self.backlog
                .push_back((sample.data().to_vec(), sample.imm().to_vec()));
        }
        busy
    }

    /// DOCA's order: the producer stops (sends still waiting fail, as expected now), then the
    /// consumer (its posted receives are flushed); both are destroyed when dropped. Sends that
    /// failed before the stop are errors.
    fn stop(self, stats: &mut Stats) {
        let failed = self.producer.failed_sends();
        if failed > 0 {
            stats.error(format!("{failed} echo(es) failed"));
        }
        if let Err(e) = self.producer.stop().and_then(|()| self.consumer.stop()) {
            stats.error(format!("cannot stop a client's producer and consumer: {e}"));
        }
    }
}

/// One client's connection; `fast` once the client has announced its consumer.
#[derive(Default)]
struct Session {
    peer: Option<u32>,
    fast: Option<FastPath>,
}

/// Passes without anything to do before the loop sleeps on the notification handle: an echo
/// client answers within microseconds, sooner than a sleep would end.
const SPIN_PASSES: u32 = 4096;

fn main() -> ExitCode {
    let flags = flags();
    match serve(&flags) {
        Ok(stats) if stats.errors == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("data_path_server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(flags: &Flags) -> std::result::Result<Stats, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let rep = DevRep::open_by_pci(&dev, &flags.rep_pci)?;
    let pe = Pe::new()?;
    // No callbacks: the server hands out its events as values.
    let server = Server::builder(&dev, &rep, &flags.server_name, &pe).start()?;
    println!(
        "server `{}` listening on {} for clients of {}, echoing up to {} bytes",
        flags.server_name, flags.pci_addr, flags.rep_pci, flags.size
    );

    let mut s = Stats::default();
    let mut sessions: HashMap<Connection, Session> = HashMap::new();
    let mut idle = 0u32;
    while !(s.echoed >= flags.count && s.served > 0 && s.clients == 0 && sessions.is_empty()) {
        let mut busy = pe.progress();
        while let Some(event) = server.try_event() {
            busy = true;
            handle(event, &mut sessions, &mut s, &server, &dev, &pe, flags.size);
        }
        for session in sessions.values_mut() {
            if let Some(fast) = &mut session.fast {
                busy |= fast.pump(&mut s);
            }
        }
        idle = if busy { 0 } else { idle + 1 };
        if idle < SPIN_PASSES {
            continue;
        }
        // Asleep on the notification handle; Ctrl-C ends the wait (once) with SHUTDOWN.
        match pe.wait(Duration::from_millis(100)) {
            Ok(_) => {}
            Err(e) if e.code() == ErrorCode::Shutdown => {
                println!("interrupted: stopping");
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    // Fast paths first: a connection with producers or consumers on it cannot close.
    for (_, session) in sessions.drain() {
        if let Some(fast) = session.fast {
            fast.stop(&mut s);
        }
    }
    server.stop()?;
    println!(
        "{} client(s) served, {} messages received, {} echoed, {} errors",
        s.served, s.received, s.echoed, s.errors
    );
    Ok(s)
}

/// What the main loop does with one of the server's events.
fn handle(
    event: ServerEvent,
    sessions: &mut HashMap<Connection, Session>,
    s: &mut Stats,
    server: &Server,
    dev: &Dev,
    pe: &Pe,
    size: usize,
) {
    match event {
        ServerEvent::Connected { conn } => {
            s.clients += 1;
            s.served += 1;
            println!("a client connected ({} connected)", s.clients);
            sessions.insert(conn, Session::default());
        }
        ServerEvent::ConnectFailed { .. } => eprintln!("a client could not connect"),
        // A client puts one consumer on its connection: the first is the one to echo to.
        ServerEvent::ConsumerNew { conn, id } => {
            let Some(session) = sessions.get_mut(&conn) else {
                return;
            };
            if session.peer.is_some() {
                return;
            }
            session.peer = Some(id);
            match FastPath::start(conn, id, dev, pe, size) {
                Ok(fast) => session.fast = Some(fast),
                Err(e) => {
                    // The client learns it from the disconnection rather than waiting.
                    s.error(format!("cannot start a client's fast path: {e}"));
                    let _ = server.channel().disconnect(conn);
                }
            }
        }
        // The client's consumer is gone: the client is leaving.
        ServerEvent::ConsumerExpired { conn, id } => {
            let Some(session) = sessions.get_mut(&conn) else {
                return;
            };
            if session.peer == Some(id) {
                if let Some(fast) = session.fast.take() {
                    fast.stop(s);
                }
            }
        }
        ServerEvent::Disconnected { conn } => {
            s.clients -= 1;
            println!(
                "a client disconnected ({} connected, {} messages echoed so far)",
                s.clients, s.echoed
            );
            if let Some(fast) = sessions.remove(&conn).and_then(|x| x.fast) {
                fast.stop(s);
            }
        }
        ServerEvent::Lagged { dropped } => s.error(format!("{dropped} server events were lost")),
        _ => {}
    }
}
