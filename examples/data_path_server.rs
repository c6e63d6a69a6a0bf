//! Comch fast path, server side: the echo partner of `data_path_client` (or the C client
//! `examples/c/comch_data_client.c`).
//!
//! It listens under a name on the BlueField Arm device and the representor of the clients' host
//! function. Once a client has put its consumer on the connection, the server puts a consumer
//! and a producer of its own there and echoes every message its consumer receives back to the
//! client's consumer, bytes and immediate data alike. It exits once it has echoed COUNT messages
//! and every client has disconnected (or on Ctrl-C).
//!
//! ```sh
//! cargo run --release --example data_path_server [-- -p 03:00.0 -r b1:00.0 -s NAME -c COUNT -b SIZE]
//! ```

#[path = "support/cli.rs"]
mod cli;
#[path = "support/interrupt.rs"]
mod interrupt;

use clap::{Command, value_parser};
use dpakit::ErrorCode;
use dpakit::comch::{Connection, Consumer, Producer, ReceivedBuf, Server};
use dpakit::dev::{Dev, DevRep};
use dpakit::pe::Pe;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;
use std::rc::Rc;
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

/// What the callbacks count.
#[derive(Default)]
struct Stats {
    clients: Cell<u32>,
    served: Cell<u32>,
    received: Cell<u64>,
    echoed: Cell<u64>,
    errors: Cell<u64>,
}

impl Stats {
    fn error(&self, what: impl std::fmt::Display) {
        eprintln!("{what}");
        self.errors.set(self.errors.get() + 1);
    }
}

/// What the server's callbacks report. Producers and consumers start and stop in the main
/// loop, outside the callbacks.
enum Event {
    Connected(Connection),
    Disconnected(Connection),
    Consumer(Connection, u32, bool),
}

/// One client's echo: our producer, and what the consumer's callback needs to use it.
struct Echo {
    producer: Producer,
    /// The client's consumer.
    peer: u32,
    /// Messages that found every send buffer in flight, sent once one is free. A client that
    /// waits for each echo never fills it.
    backlog: RefCell<VecDeque<(Vec<u8>, Vec<u8>)>>,
    /// Set while the fast path is torn down: flushed sends are expected then.
    stopping: Rc<Cell<bool>>,
    stats: Rc<Stats>,
}

impl Echo {
    /// Copies a message into a loaned send buffer and sends it; `false` if none is free.
    fn send(&self, data: &[u8], imm: &[u8]) -> bool {
        match self.producer.loan(data.len()) {
            Ok(mut loan) => {
                loan.as_mut_slice().copy_from_slice(data);
                if let Err(e) = loan.send(self.peer, imm, 0) {
                    self.stats.error(format!("cannot send an echo: {e}"));
                }
                true
            }
            Err(e) if e.code() == ErrorCode::NoMemory => false,
            Err(e) => {
                self.stats
                    .error(format!("cannot loan a buffer for an echo: {e}"));
                true
            }
        }
    }

    /// The consumer's callback. The receive buffer is posted again when it returns, so what
    /// cannot be sent at once is kept in the backlog.
    fn received(&self, r: &ReceivedBuf<'_>) {
        if self.stopping.get() {
            return;
        }
        self.stats.received.set(self.stats.received.get() + 1);
        if self.backlog.borrow().is_empty() && self.send(r.data, r.imm) {
            return;
        }
        self.backlog
            .borrow_mut()
            .push_back((r.data.to_vec(), r.imm.to_vec()));
    }

    /// Sends what waited, in order, while send buffers are free.
    fn drain(&self) {
        loop {
            let Some((data, imm)) = self.backlog.borrow_mut().pop_front() else {
                return;
            };
            if !self.send(&data, &imm) {
                self.backlog.borrow_mut().push_front((data, imm));
                return;
            }
        }
    }
}

/// Our producer and consumer on a client's connection.
struct FastPath {
    echo: Rc<Echo>,
    consumer: Consumer,
}

impl FastPath {
    fn start(
        conn: Connection,
        peer: u32,
        dev: &Dev,
        pe: &Pe,
        size: usize,
        stats: &Rc<Stats>,
    ) -> dpakit::Result<FastPath> {
        let (on_sent, stopping) = (stats.clone(), Rc::new(Cell::new(false)));
        let flushed = stopping.clone();
        // The producer first: an echo may be due as soon as the client sees our consumer.
        let producer = Producer::builder(conn, dev, pe)
            .num_send(NUM_BUFS)
            .buf_size(size)
            .on_send_complete(move |done| {
                if done.status == ErrorCode::Success {
                    on_sent.echoed.set(on_sent.echoed.get() + 1);
                } else if !flushed.get() {
                    on_sent.error(format!("an echo failed: {:?}", done.status));
                }
            })
            .start()?;
        let echo = Rc::new(Echo {
            producer,
            peer,
            backlog: RefCell::default(),
            stopping,
            stats: stats.clone(),
        });
        let on_recv = echo.clone();
        let consumer = Consumer::builder(conn, dev, pe)
            .num_recv(NUM_BUFS)
            .buf_size(size)
            .on_recv(move |r| on_recv.received(r))
            .start()?;
        Ok(FastPath { echo, consumer })
    }

    /// DOCA's order: the producer stops (sends still waiting fail), then the consumer (its
    /// posted receives are flushed); both are destroyed when dropped.
    fn stop(self) -> dpakit::Result<()> {
        self.echo.stopping.set(true);
        self.echo.producer.stop()?;
        self.consumer.stop()
    }
}

/// One client's connection; `fast` once the client has announced its consumer.
#[derive(Default)]
struct Session {
    peer: Option<u32>,
    fast: Option<FastPath>,
}

fn main() -> ExitCode {
    let flags = flags();
    interrupt::install();
    match serve(&flags) {
        Ok(stats) if stats.errors.get() == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("data_path_server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(flags: &Flags) -> Result<Rc<Stats>, Box<dyn std::error::Error>> {
    let dev = Dev::open_by_pci(&flags.pci_addr)?;
    let rep = DevRep::open_by_pci(&dev, &flags.rep_pci)?;
    let pe = Pe::new()?;
    let stats = Rc::new(Stats::default());
    let events: Rc<RefCell<Vec<Event>>> = Rc::default();
    let (on_connect, on_disconnect) = (stats.clone(), stats.clone());
    let (connected, disconnected, consumers) = (events.clone(), events.clone(), events.clone());
    let server = Server::builder(&dev, &rep, &flags.server_name, &pe)
        .on_connect(move |_, conn, ok| {
            if !ok {
                eprintln!("a client could not connect");
                return;
            }
            let s = &on_connect;
            s.clients.set(s.clients.get() + 1);
            s.served.set(s.served.get() + 1);
            println!("a client connected ({} connected)", s.clients.get());
            connected.borrow_mut().push(Event::Connected(conn));
        })
        .on_disconnect(move |_, conn, _| {
            let s = &on_disconnect;
            s.clients.set(s.clients.get() - 1);
            println!(
                "a client disconnected ({} connected, {} messages echoed so far)",
                s.clients.get(),
                s.echoed.get()
            );
            disconnected.borrow_mut().push(Event::Disconnected(conn));
        })
        .on_consumer(move |_, conn, id, created| {
            consumers
                .borrow_mut()
                .push(Event::Consumer(conn, id, created))
        })
        .start()?;
    println!(
        "server `{}` listening on {} for clients of {}, echoing up to {} bytes",
        flags.server_name, flags.pci_addr, flags.rep_pci, flags.size
    );

    let mut sessions: HashMap<Connection, Session> = HashMap::new();
    let stop_fast_path = |fast: FastPath| {
        if let Err(e) = fast.stop() {
            stats.error(format!("cannot stop a client's producer and consumer: {e}"));
        }
    };
    loop {
        let finished = |sessions: &HashMap<Connection, Session>| {
            stats.echoed.get() >= flags.count
                && stats.served.get() > 0
                && stats.clients.get() == 0
                && sessions.is_empty()
        };
        if finished(&sessions) || interrupt::interrupted() {
            break;
        }
        let backlog = || {
            sessions.values().any(|s| {
                s.fast
                    .as_ref()
                    .is_some_and(|f| !f.echo.backlog.borrow().is_empty())
            })
        };
        // Busy for a moment after each event, then asleep on the notification handle; the
        // timeout only bounds how long a signal may wait to be noticed.
        match pe.progress_until(Duration::from_millis(100), || {
            !events.borrow().is_empty() || backlog() || interrupt::interrupted()
        }) {
            // A signal may cut the wait short with an error; the flag is what counts then.
            Err(e) if e.code() != ErrorCode::TimeOut && !interrupt::interrupted() => {
                return Err(e.into());
            }
            _ => {}
        }
        for s in sessions.values() {
            if let Some(fast) = &s.fast {
                fast.echo.drain();
            }
        }
        let happened = std::mem::take(&mut *events.borrow_mut());
        for event in happened {
            match event {
                Event::Connected(conn) => {
                    sessions.insert(conn, Session::default());
                }
                // A client puts one consumer on its connection: the first is the one to echo to.
                Event::Consumer(conn, id, true) => {
                    let Some(s) = sessions.get_mut(&conn) else {
                        continue;
                    };
                    if s.peer.is_some() {
                        continue;
                    }
                    s.peer = Some(id);
                    match FastPath::start(conn, id, &dev, &pe, flags.size, &stats) {
                        Ok(fast) => s.fast = Some(fast),
                        Err(e) => {
                            // The client learns it from the disconnection rather than waiting.
                            stats.error(format!("cannot start a client's fast path: {e}"));
                            let _ = server.channel().disconnect(conn);
                        }
                    }
                }
                // The client's consumer is gone: the client is leaving.
                Event::Consumer(conn, id, false) => {
                    let Some(s) = sessions.get_mut(&conn) else {
                        continue;
                    };
                    if s.peer == Some(id) {
                        if let Some(fast) = s.fast.take() {
                            stop_fast_path(fast);
                        }
                    }
                }
                Event::Disconnected(conn) => {
                    if let Some(fast) = sessions.remove(&conn).and_then(|s| s.fast) {
                        stop_fast_path(fast);
                    }
                }
            }
        }
    }
    if interrupt::interrupted() {
        println!("interrupted: stopping");
    }
    // Fast paths first: a connection with producers or consumers on it cannot close.
    for (_, s) in sessions.drain() {
        if let Some(fast) = s.fast {
            stop_fast_path(fast);
        }
    }
    server.stop()?;
    println!(
        "{} client(s) served, {} messages received, {} echoed, {} errors",
        stats.served.get(),
        stats.received.get(),
        stats.echoed.get(),
        stats.errors.get()
    );
    Ok(stats)
}
