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
use dpakit::dpa::Dpa;
use dpakit::pe::Pe;
use dpakit::soft::{ExecMode, SchedMode, SoftSettings};
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use dpakit_fixture_faulty_kernels as faulty;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const DEBUGGEE: &str = "DPAKIT_TEST_DEBUGGEE";
/// Where the read_at debuggee asks for gdb through `dpakit::soft::set_gdb` rather than
/// `DPAKIT_SOFT_GDB`.
const ADDRESS: &str = "DPAKIT_TEST_GDB_ADDRESS";
/// Generous: the program waits while gdb has it stopped.
const WAIT: Duration = Duration::from_secs(60);

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
    let addr = format!("127.0.0.1:{}", free_port());
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
    // The rest of its stderr, read as it comes so the program never blocks on a full pipe.
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });
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
    let gdb = gdb
        .output()
        .expect("gdb-multiarch (cargo xtask test installs it)");
    let gdb_said = format!(
        "{}{}",
        String::from_utf8_lossy(&gdb.stdout),
        String::from_utf8_lossy(&gdb.stderr)
    );
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
