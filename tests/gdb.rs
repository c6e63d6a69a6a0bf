//! GDB on ISA mode, driven as a user would: `gdb-multiarch -batch` against a program run with
//! `DPAKIT_SOFT_GDB`. It breaks in the echo kernel with a source-level backtrace, steps, reads
//! registers and memory, and detaches, after which the program finishes normally; a kernel that
//! reads out of bounds stops in gdb with SIGSEGV at its line, before its DPA context fails.
//!
//! Each program under the debugger is this test binary again, running one of the `debuggee_*`
//! tests with `DPAKIT_TEST_DEBUGGEE` set (without it they return at once).

// The soft device's own debugger, with the fixture's kernels (which feature doca builds have no
// app library for).
#![cfg(not(feature = "doca"))]

use dpakit::abi::{Echo, ImmMessage};
use dpakit::dpa::{Dpa, DpaThread, NotificationCompletion};
use dpakit::pe::Pe;
use dpakit::soft::{ExecMode, SchedMode, SoftSettings};
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use dpakit_fixture_faulty_kernels as faulty;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DEBUGGEE: &str = "DPAKIT_TEST_DEBUGGEE";
/// Where the read_at debuggee asks for gdb through `dpakit::soft::set_gdb` rather than
/// `DPAKIT_SOFT_GDB`.
const ADDRESS: &str = "DPAKIT_TEST_GDB_ADDRESS";
/// Generous: the program waits while gdb has it stopped.
const WAIT: Duration = Duration::from_secs(60);
/// A whole session, gdb and the program: past it both are killed and the test fails.
const SESSION: Duration = Duration::from_secs(120);

fn debuggee() -> bool {
    std::env::var_os(DEBUGGEE).is_some()
}

/// Three echo round trips through `kernel` in ISA mode.
fn echo_three_times(kernel: &'static dpakit::ThreadKernel<dpakit::abi::args::MsgqPathArgs>) {
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .exec_mode(ExecMode::Isa)
        .start()
        .unwrap();
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, kernel).start().unwrap();
    for token in 0..3 {
        let echo = Echo {
            token,
            timestamp_ns: 0,
            tag: 0xfeed,
        };
        let reply = path.round_trip(&ImmMessage::new(1, &echo), WAIT).unwrap();
        let back: Echo = reply.msg.view().unwrap();
        assert_eq!(back.token, token);
    }
    dpa.check().unwrap();
    println!("debuggee: 3 echoes");
}

#[test]
fn debuggee_echo() {
    if debuggee() {
        echo_three_times(&kernels::ECHO);
    }
}

#[test]
fn debuggee_echo_c() {
    if debuggee() {
        echo_three_times(&kernels::ECHO_C);
    }
}

#[test]
fn debuggee_read_at() {
    if !debuggee() {
        return;
    }
    let address = std::env::var(ADDRESS).unwrap();
    let e = dpakit::soft::set_gdb("no address at all").unwrap_err();
    assert_eq!(e.code(), dpakit::ErrorCode::InvalidValue, "{e}");
    dpakit::soft::set_gdb(&address).unwrap();
    let dpa = Dpa::builder(&open_dpa_dev().unwrap())
        .app(&faulty::APP)
        .exec_mode(ExecMode::Isa)
        .start()
        .unwrap();
    let e = dpa
        .rpc(&faulty::READ_AT, (faulty::WILD_ADDRESS,))
        .unwrap_err();
    assert!(e.to_string().contains("read_at"), "{e}");
    println!("debuggee: the DPA failed: {e}");
}

/// What the spin debuggee says once its kernel spins.
const SPINS: &str = "debuggee: the kernel spins";
/// What gdb writes to the release word, and the spin kernel returns.
const RELEASE: u64 = 7;

/// A DPA thread running `SPIN_UNTIL_RELEASED` over two words of DPA memory, activated (by an
/// RPC) and running: the memory's address. The kernel stops spinning once the second word is set.
fn spinning(dpa: &Dpa) -> (DpaThread, NotificationCompletion, dpakit::dpa::DevPtr) {
    let flags = dpa.mem_alloc_init(&[0u64; 2]).unwrap();
    let thread = DpaThread::builder(dpa, &faulty::SPIN_UNTIL_RELEASED)
        .arg(flags.raw())
        .start()
        .unwrap();
    let wake = NotificationCompletion::start(dpa, &thread).unwrap();
    thread.run().unwrap();
    dpa.rpc(&faulty::NOTIFY, (wake.dpa_handle().raw(),))
        .unwrap();
    (thread, wake, flags)
}

/// Waits, at most [`WAIT`], until `done`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the first word at `flags` is `value`; `dpa` must not fail meanwhile.
fn wait_for_word(dpa: &Dpa, flags: dpakit::dpa::DevPtr, value: u64) {
    wait_until(&format!("the spin kernel to write {value}"), || {
        let mut word = [0u8; 8];
        dpa.d2h_memcpy(&mut word, flags).unwrap();
        if let Some(e) = dpa.error() {
            panic!("the DPA failed waiting for {value}: {e}");
        }
        u64::from_le_bytes(word) == value
    });
}

/// A DPA context running the fixture's kernels in ISA mode, with an instruction budget.
fn fixture_dpa(budget: u64) -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(&faulty::APP)
        .exec_mode(ExecMode::Isa)
        .isa_budget(budget)
        .start()
        .unwrap()
}

#[test]
fn debuggee_spin() {
    if !debuggee() {
        return;
    }
    // Room to spin for seconds, yet bounded: a Ctrl-C that never stops it ends in SIGXCPU.
    let dpa = fixture_dpa(2_000_000_000);
    // A thread that never runs: gdb lists it too, between activations.
    let _never_run = DpaThread::builder(&dpa, &faulty::SPIN_UNTIL_RELEASED)
        .start()
        .unwrap();
    let (thread, _wake, flags) = spinning(&dpa);
    wait_for_word(&dpa, flags, 1);
    eprintln!("{SPINS}");
    wait_for_word(&dpa, flags, 2);
    let mut release = [0u8; 8];
    dpa.d2h_memcpy(&mut release, dpakit::dpa::DevPtr(flags.raw() + 8))
        .unwrap();
    assert_eq!(u64::from_le_bytes(release), RELEASE);
    thread.stop().unwrap();
    dpa.check().unwrap();
    println!("debuggee: released with {RELEASE}");
}

/// Which fatal error `debuggee_fault` makes.
const FAULT: &str = "DPAKIT_TEST_FAULT";

/// Fatal errors a kernel makes, as (name, kernel, what the DPA's error says, the signal gdb
/// shows).
const FAULTS: [(&str, &str, &str, &str); 4] = [
    (
        "panic",
        "panics_rpc",
        "an RPC bug on purpose (5)",
        "SIGABRT",
    ),
    (
        "budget",
        "spin_until_released",
        "without making progress",
        "SIGXCPU",
    ),
    ("illegal", "illegal_rpc", "an illegal instruction", "SIGILL"),
    ("bad call", "notify", "notification completion", "SIGSYS"),
];

/// A kernel that makes the fatal error `DPAKIT_TEST_FAULT` names; its error must name the kernel
/// and say what [`FAULTS`] says.
#[test]
fn debuggee_fault() {
    if !debuggee() {
        return;
    }
    let fault = std::env::var(FAULT).unwrap();
    let (_, kernel, says, _) = FAULTS.iter().find(|f| f.0 == fault).unwrap();
    let dpa = fixture_dpa(1_000_000);
    let e = match fault.as_str() {
        "panic" => dpa.rpc(&faulty::PANICS_RPC, (5,)).unwrap_err(),
        "illegal" => dpa.rpc(&faulty::ILLEGAL_RPC, ()).unwrap_err(),
        "bad call" => dpa
            .rpc(&faulty::NOTIFY, (faulty::BOGUS_NOTIFICATION,))
            .unwrap_err(),
        _ => {
            // Never released: the budget ends it.
            let _spinning = spinning(&dpa);
            wait_until("the budget to run out", || dpa.error().is_some());
            dpa.error().unwrap()
        }
    };
    let text = e.to_string();
    assert!(text.contains(kernel) && text.contains(says), "{text}");
    let failed = dpa.error().unwrap();
    assert!(e.message().ends_with(failed.message()), "{e} / {failed}");
    println!("debuggee: the DPA failed: {e}");
}

/// A free port on the loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs debuggee `name` waiting for gdb, then `gdb-multiarch -batch` with `commands`, whose
/// output must say each of `gdb_says`; returns the debuggee's output (it must succeed). gdb is
/// not told the image: the soft device names it (`qXfer:exec-file`).
fn debug(name: &str, commands: &[&str], gdb_says: &[&str]) -> String {
    debug_with(name, &[], commands, gdb_says, None)
}

/// [`debug`], the debuggee given `env` too; with `ctrl_c`, once the debuggee's stderr says it
/// the test sends gdb SIGINT, as a terminal does on Ctrl-C.
fn debug_with(
    name: &str,
    env: &[(&str, &str)],
    commands: &[&str],
    gdb_says: &[&str],
    ctrl_c: Option<&'static str>,
) -> String {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut program = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(DEBUGGEE, "1")
        .env(
            if name == "debuggee_read_at" {
                ADDRESS
            } else {
                "DPAKIT_SOFT_GDB"
            },
            &addr,
        )
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // gdb connects once the program says it waits.
    let mut stderr = BufReader::new(program.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the program ended before waiting for gdb: {said}"
        );
        said.push_str(&line);
        if line.contains("waiting for gdb") {
            break;
        }
    }
    let mut gdb = Command::new("gdb-multiarch");
    gdb.args([
        "-batch",
        "-nx",
        "-ex",
        "set pagination off",
        "-ex",
        "set confirm off",
    ]);
    gdb.arg("-ex").arg(format!("target remote {addr}"));
    for c in commands {
        gdb.args(["-ex", c]);
    }
    // gdb's output, in a file (the port makes its name this session's own).
    let gdb_out = std::env::temp_dir().join(format!("dpakit-gdb-test-{port}.out"));
    let out_file = std::fs::File::create(&gdb_out).unwrap();
    let mut gdb = gdb
        .stdin(Stdio::null())
        .stdout(out_file.try_clone().unwrap())
        .stderr(out_file)
        .spawn()
        .expect("gdb-multiarch (cargo xtask test installs it)");
    // The rest of the program's stderr, read as it comes so it never blocks on a full pipe.
    let (saw_ctrl_c_line, ctrl_c_due) = std::sync::mpsc::channel();
    let drain = std::thread::spawn(move || {
        let mut ctrl_c = ctrl_c;
        let mut rest = String::new();
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap_or(0) > 0 {
            if ctrl_c.take_if(|when| line.contains(*when)).is_some() {
                let _ = saw_ctrl_c_line.send(());
            }
            rest.push_str(&line);
            line.clear();
        }
        rest
    });
    // Signalled from here, between polls, so gdb is never reaped before its kill(2).
    let deadline = Instant::now() + SESSION;
    let status = loop {
        if let Some(status) = gdb.try_wait().unwrap() {
            break status;
        }
        if ctrl_c_due.try_recv().is_ok() {
            let pid = libc::pid_t::try_from(gdb.id()).unwrap();
            // SAFETY: kill(2) on our child gdb, which try_wait found not yet reaped.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        }
        if Instant::now() > deadline {
            let _ = gdb.kill();
            let _ = program.kill();
            panic!(
                "gdb and the program still ran after {SESSION:?}; gdb said:\n{}",
                std::fs::read_to_string(&gdb_out).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let gdb_said = std::fs::read_to_string(&gdb_out).unwrap();
    let _ = std::fs::remove_file(&gdb_out);
    assert!(status.success(), "gdb failed ({status}):\n{gdb_said}");
    let out = program.wait_with_output().unwrap();
    let rest = drain.join().unwrap();
    let program_said = format!("{}{said}{rest}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "the program under gdb failed ({}):\n{program_said}\ngdb:\n{gdb_said}",
        out.status
    );
    for want in gdb_says {
        assert!(
            gdb_said.contains(want),
            "gdb did not say `{want}`:\n{gdb_said}"
        );
    }
    program_said
}

#[test]
fn gdb_breaks_in_the_echo_kernel_steps_and_detaches() {
    if debuggee() {
        return;
    }
    let program = debug(
        "debuggee_echo",
        &[
            "break echo",
            "continue",
            "bt",
            "info threads",
            "stepi",
            "info registers pc",
            "x/2xw $sp",
            "delete",
            "detach",
        ],
        &["Breakpoint 1", "echo", "echo.rs:", "#0", "pc "],
    );
    assert!(program.contains("3 echoes"), "{program}");
}

#[test]
fn gdb_reads_the_32_byte_message_the_echo_kernel_answers() {
    if debuggee() {
        return;
    }
    // At the device call that sends the reply (called from dpa-dev's comch.rs), a2 points at
    // the message's 32 bytes and a3 is their length: the Echo the host sent, tag 0xfeed in its
    // last word after the header, the token and the timestamp.
    let program = debug(
        "debuggee_echo",
        &[
            "break doca_dpa_dev_comch_producer_post_send_imm_only",
            "continue",
            "bt 2",
            "p $a3",
            "x/4gx $a2",
            "delete",
            "detach",
        ],
        &["Breakpoint 1", "comch.rs:", "= 32", "0x000000000000feed"],
    );
    assert!(program.contains("3 echoes"), "{program}");
}

#[test]
fn a_kernel_reading_out_of_bounds_stops_in_gdb_at_its_line() {
    if debuggee() {
        return;
    }
    let program = debug(
        "debuggee_read_at",
        &["continue", "bt", "info threads", "detach"],
        &["SIGSEGV", "read_at", "lib.rs:"],
    );
    assert!(program.contains("the DPA failed"), "{program}");
    assert!(
        program.contains("outside the memory the kernel may reach"),
        "{program}"
    );
}

#[test]
fn a_watchpoint_stops_the_kernel_that_reads_the_watched_word() {
    if debuggee() {
        return;
    }
    // At the echo kernel's entry a0 points at its argument block, whose first word (the DPA
    // consumer's handle) the kernel reads next.
    let program = debug(
        "debuggee_echo",
        &[
            "break echo",
            "continue",
            "set language c",
            "rwatch -l *(long *)$a0",
            "delete 1",
            "continue",
            "bt 1",
            "delete",
            "detach",
        ],
        &["read watchpoint 2", "Value = "],
    );
    assert!(program.contains("3 echoes"), "{program}");
}

#[test]
fn gdb_breaks_in_the_c_echo_kernel_at_its_source_line() {
    if debuggee() {
        return;
    }
    let program = debug(
        "debuggee_echo_c",
        &[
            "break echo_c",
            "continue",
            "bt",
            "info locals",
            "delete",
            "detach",
        ],
        &["Breakpoint 1", "echo_c", "echo.c:"],
    );
    assert!(program.contains("3 echoes"), "{program}");
}

#[test]
fn ctrl_c_in_gdb_stops_a_spinning_kernel_which_gdb_then_releases() {
    if debuggee() {
        return;
    }
    // Once the kernel spins the test presses Ctrl-C: gdb's `continue` returns with the kernel
    // stopped in its loop (the thread that never ran listed beside it), and gdb writes the word
    // it waits for.
    let release = format!("set var *(unsigned long long *)(arg + 8) = {RELEASE}");
    let program = debug_with(
        "debuggee_spin",
        &[],
        &[
            "continue",
            "bt",
            "info threads",
            "set language c",
            &release,
            "detach",
        ],
        &[
            "SIGINT",
            "spin_until_released",
            "lib.rs:",
            "(kernel spin_until_released: not run, between activations (no registers))",
        ],
        Some(SPINS),
    );
    assert!(program.contains("released with 7"), "{program}");
}

#[test]
fn each_kind_of_fatal_error_stops_in_gdb_at_the_kernel_that_made_it() {
    if debuggee() {
        return;
    }
    for (fault, kernel, says, signal) in FAULTS {
        // The backtrace reaches the kernel (a panic's through its handler and `core`), and
        // `info threads` names it and says the error.
        let program = debug_with(
            "debuggee_fault",
            &[(FAULT, fault)],
            &[
                "continue",
                "bt",
                "info threads",
                "info registers pc",
                "detach",
            ],
            &[
                signal,
                &format!("dpakit_fixture_faulty_kernels::{kernel} ("),
                &format!("kernel {kernel}: "),
                says,
                "lib.rs:",
                "pc ",
            ],
            None,
        );
        assert!(program.contains("the DPA failed"), "{fault}: {program}");
        assert!(program.contains(says), "{fault}: {program}");
    }
}
