//! The DPA's edges through the public API, with the kernels of the faulty-kernels fixture: a
//! kernel's panic is the DPA's error with its message and location, natively and from the DPA
//! image; a kernel that never returns to the scheduler is named by every wait that times out,
//! and its program still ends; the ISA budget lets a hard-working kernel serve. (The fixture's
//! kernels exist only for the soft device's own build: not with feature `doca`.)
//!
//! A native kernel that never returns holds its worker until the process ends, so those tests
//! run it in a child process: the test binary itself, in a role chosen by environment.
#![cfg(not(feature = "doca"))]

use dpakit::dpa::Dpa;
use dpakit::open_dpa_dev;
use dpakit::soft::ExecMode;
use dpakit::soft::SoftSettings;
use dpakit_fixture_faulty_kernels as faulty;

/// A DPA context running the fixture's kernels in `mode` (in ISA mode, the image the fixture's
/// app embeds).
fn fixture_dpa(mode: ExecMode) -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(&faulty::APP)
        .workers(1)
        .exec_mode(mode)
        .start()
        .unwrap()
}

#[test]
fn a_kernel_panic_is_the_dpa_error_with_its_message_and_location() {
    for mode in [ExecMode::Native, ExecMode::Isa] {
        let dpa = fixture_dpa(mode);
        assert_eq!(dpa.rpc(&faulty::PANICS_RPC, (7,)).unwrap(), 7);
        assert_eq!(dpa.error(), None);
        let e = dpa.rpc(&faulty::PANICS_RPC, (5,)).unwrap_err();
        let fatal = dpa.error().expect("the context failed");
        let text = fatal.message();
        assert!(
            text.starts_with(
                "kernel `panics_rpc`: panicked at xtask/fixtures/faulty-kernels/src/lib.rs:"
            ) && text.ends_with(": an RPC bug on purpose (5)"),
            "{mode:?}: {text}"
        );
        assert!(e.message().contains(text), "{mode:?}: {e}");
    }
}

/// Sends `messages` seeds to the checksum kernel on `dpa`, keeping 64 in flight, and checks
/// every reply; returns what the interpreter counted for the kernel's thread.
fn serve_checksums(dpa: &Dpa, messages: u64) -> dpakit::soft::IsaProfile {
    use dpakit::MsgqPath;
    use dpakit::pe::Pe;
    use std::time::Duration;
    const DEPTH: u64 = 64;
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(dpa, &pe, &faulty::CHECKSUM)
        .depth(DEPTH as u32)
        .start()
        .unwrap();
    let check = |seed: u64| {
        let reply = path.recv(Duration::from_secs(30)).unwrap();
        let got = u64::from_le_bytes(reply.bytes().try_into().unwrap());
        assert_eq!(got, faulty::checksum_of(seed), "reply to {seed}");
    };
    for seed in 0..messages {
        if seed >= DEPTH {
            check(seed - DEPTH);
        }
        path.send(&seed.to_le_bytes()).unwrap();
    }
    for seed in messages.saturating_sub(DEPTH)..messages {
        check(seed);
    }
    assert_eq!(dpa.error(), None);
    path.thread().isa_profile().unwrap()
}

/// A DPA context running the fixture's image with an ISA budget of `budget` instructions.
fn isa_dpa_with_budget(budget: u64) -> Dpa {
    Dpa::builder(&open_dpa_dev().unwrap())
        .app(&faulty::APP)
        .workers(1)
        .exec_mode(ExecMode::Isa)
        .isa_budget(budget)
        .start()
        .unwrap()
}

/// The budget counts the instructions since the kernel last made progress: with room for
/// about 7 messages' work, the checksum kernel serves 1,000 in activations of up to 64 each.
#[test]
fn the_isa_budget_counts_from_the_kernels_last_message() {
    let profile = serve_checksums(&isa_dpa_with_budget(100_000), 1_000);
    assert!(profile.max_instructions > 100_000, "{profile:?}");
}

/// The kit's receive loop ends its activation after a batch of messages, however many wait.
#[test]
fn a_serve_activation_answers_a_batch_at_most() {
    const MESSAGES: u64 = 2_000;
    let profile = serve_checksums(&isa_dpa_with_budget(1 << 40), MESSAGES);
    let per_message = profile.instructions / MESSAGES;
    assert!(
        profile.max_instructions <= (u64::from(dpakit_dev::serve::BATCH) + 1) * per_message,
        "{profile:?}"
    );
}

/// The done-when of the ISA budget: a kernel working about 14,000 instructions per message,
/// kept busy with 64 messages in flight, serves 100,000 of them with the default budget.
/// Minutes in a debug build: `cargo xtask test` runs it with `--release` (seconds).
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "minutes in a debug build: cargo test --release --test dpa_edges"
)]
fn a_hard_working_serve_kernel_serves_100000_messages_in_isa_mode() {
    const MESSAGES: u64 = 100_000;
    let started = std::time::Instant::now();
    let profile = serve_checksums(&fixture_dpa(ExecMode::Isa), MESSAGES);
    eprintln!(
        "{MESSAGES} messages in {:?}: {} instructions per message, {} activations, at most {} \
         instructions in one",
        started.elapsed(),
        profile.instructions / MESSAGES,
        profile.activations,
        profile.max_instructions
    );
    assert!(profile.instructions / MESSAGES >= 14_000, "{profile:?}");
}

// ---- A kernel that never returns to the scheduler ----

/// What a program with the hanging kernel prints before its end, and how it ends.
const ROLE: &str = "DPAKIT_EDGE_ROLE";

/// A program whose kernel never returns: it sends a message, waits for the reply, and returns
/// the wait's error; everything is dropped on the way out.
fn hanging_program() -> dpakit::Result<()> {
    use dpakit::MsgqPath;
    use dpakit::pe::Pe;
    use std::time::Duration;
    let dpa = fixture_dpa(ExecMode::Native);
    let pe = Pe::new()?;
    let path = MsgqPath::builder(&dpa, &pe, &faulty::HANG).start()?;
    path.send(&[1; 8])?;
    if let Err(e) = pe.progress_until(Duration::from_millis(1500), || false) {
        eprintln!("progress_until: {e}");
    }
    path.recv(Duration::from_secs(1))?;
    Ok(())
}

/// Entry point of the child process; a no-op in a normal test run.
#[test]
fn role() {
    if std::env::var(ROLE).as_deref() == Ok("hang") {
        if let Err(e) = hanging_program() {
            eprintln!("program ended with: {e}");
            std::process::exit(3);
        }
        std::process::exit(0);
    }
}

/// A program whose native kernel never returns to the scheduler ends within 15 s, with errors
/// that name the kernel, its thread and how long its activation has run: the wait for a reply,
/// the progress engine's wait, the thread's stop (TIME_OUT after 5 s, the worker abandoned),
/// and nothing waits again while everything is dropped.
#[test]
fn a_native_kernel_that_never_returns_ends_its_program_with_a_named_error() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "role", "--nocapture", "--test-threads=1", "-q"])
        .env(ROLE, "hang")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the program did not end within 15 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let ended = started.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    eprintln!("the program ended after {ended:?}:\n{stderr}");
    assert_eq!(status.code(), Some(3), "{stderr}");
    let line = |prefix: &str| {
        stderr
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stderr}"))
            .to_string()
    };
    let running = "(kernel `hang`): its current activation (number 1) has run for";
    let waited = line("progress_until: ");
    assert!(
        waited.contains("meanwhile DPA thread 0 of DPA context"),
        "{waited}"
    );
    assert!(waited.contains(running), "{waited}");
    let ended_with = line("program ended with: ");
    assert!(
        ended_with.contains("MsgqPath::recv: no reply from kernel `hang` within 1s")
            && ended_with.contains(running),
        "{ended_with}"
    );
    let stopped = line("dpakit: MsgqPath dropped: stopping its DPA thread: ");
    assert!(
        stopped.contains("DOCA_ERROR_TIME_OUT")
            && stopped.contains(running)
            && stopped.contains("doca_dpa_thread_stop waited 5s for it to end"),
        "{stopped}"
    );
}

/// In ISA mode a stop ends a kernel that spins without end at once, between two instructions:
/// the worker is not abandoned, and the context stays healthy.
#[test]
fn a_stop_ends_a_spinning_kernel_in_isa_mode() {
    use dpakit::MsgqPath;
    use dpakit::pe::Pe;
    use std::time::{Duration, Instant};
    // A budget that never runs out: only the stop ends the activation.
    let dpa = isa_dpa_with_budget(1 << 50);
    let pe = Pe::new().unwrap();
    let path = MsgqPath::builder(&dpa, &pe, &faulty::HANG).start().unwrap();
    path.send(&[1; 8]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let spinning = loop {
        let doing = path.thread().describe().unwrap();
        if doing.contains("its current activation (number 1) has run for") {
            break doing;
        }
        assert!(
            Instant::now() < deadline,
            "the kernel never started: {doing}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(spinning.contains("(kernel `hang`)"), "{spinning}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        dpakit::soft::long_activations(Duration::from_millis(100))
            .iter()
            .any(|l| l.contains("(kernel `hang`)")),
        "the process-wide list names it"
    );
    path.thread().stop().unwrap();
    let doing = path.thread().describe().unwrap();
    assert!(doing.contains("finished or stopped"), "{doing}");
    assert_eq!(dpa.error(), None);
}
