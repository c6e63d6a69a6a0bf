//! dpakit's build tasks: `cargo xtask <command>`.

mod api;
mod bench;
mod build_dpa;
mod debug;
mod dpa_top;
mod fuzz;
mod modules;
mod new_project;
mod profile;
mod sdk_checks;
mod setup;
mod soft_sdk;
mod test;
mod user_projects;

use dpakit_build::{Kernels, dpacc};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  build-dpa [--release] [--profile] [--dpacc]
                          cross-compile dpa-kernels (Rust and C) for the DPA
                          (riscv64imac-unknown-none-elf), write
                          target/dpa/<profile>/libdpakit_kernels.a and report.json, print each
                          kernel's language and code size and the device symbols it imports,
                          link the DPA image the soft device's ISA mode runs
                          (dpakit_kernels.elf), and build the soft device's app library
                          (soft/libdpakit_kernels.so). --profile: add each kernel's
                          instructions per message in ISA mode (the isa_profile example).
                          --dpacc: then hand the device objects to DOCA's dpacc (found through
                          DOCA_HOME or PATH) for the BlueField-3 DPA program,
                          target/dpa/<profile>/dpacc/libdpakit_kernels.a. (A plain cargo build
                          builds the image too, and embeds it in the kit's app.)
  debug --example NAME | --bin NAME [--kernel SYMBOL] [--batch CMD]... [-- ARGS]
                          build the program, run it in ISA mode waiting for gdb, and start
                          gdb-multiarch connected to it (a breakpoint on SYMBOL if given;
                          --batch: run those gdb commands without a prompt); docs/debugging.md
  dpa-top [--pid PID] [--json] [--once] [--interval MS]
                          what the DPA contexts of running programs are doing, refreshed
                          every second: per DPA thread its kernel, state, activations,
                          instructions and device calls (ISA mode); per MsgQ messages sent
                          and taken, and credits. --json: the view as JSON (once, or every
                          MS with --interval); --once: print once and exit
  new DIR [--name NAME] [--dpakit-path DIR | --dpakit-version VER | --dpakit-git URL [--dpakit-rev REV]]
                          write a project of your own: a kernel crate, the types it shares
                          with its host program, the host program (cargo build builds and
                          embeds the kernels' DPA image), and an xtask with build-dpa (report,
                          profile, dpacc) through dpakit-build; dpakit comes from
                          this checkout unless a flag says otherwise
  soft-sdk [--side host|arm] [--prefix DIR]
                          lay the soft device out like a DOCA SDK (default target/soft-doca):
                          include/, lib/libdoca_{common,comch,dpa}.so and .a, lib/pkgconfig/;
                          --side arm: for the BlueField Arm's side of a pair (DOCA_ARCH_DPU
                          defined; default target/soft-doca-arm)
  test                    install what this machine lacks, then run fmt, clippy, build-dpa,
                          the whole test suite, the C programs against the soft SDK and the
                          kit with feature doca against it (what CI runs)
  fuzz [--time SECS] [TARGET...]
                          build the fuzz targets of fuzz/ with nightly and libFuzzer (no
                          cargo-fuzz needed), replay fuzz/regressions/, then run each target
                          for SECS seconds (default 60); targets: capi_sequence,
                          message_decode, wire_peer, cc_peer. Corpus, crashes and logs go
                          to target/fuzz/
  profile [--isa|--one-way]
                          instructions per 32-byte MsgQ round trip (callgrind, deterministic
                          mode, both sides), split by layer, with the costliest functions;
                          --isa: the echo from the kit's DPA image in ISA mode; --one-way:
                          per message streamed to the sink kernel (1024 credits), the
                          throughput path; callgrind files in target/profile/
  api [--bless]           the public API of dpakit, dpakit-host, dpakit-abi, dpakit-dev and
                          dpakit-build (rustdoc JSON, nightly) against api/<crate>.txt;
                          --bless writes the files
  modules [--strict] [--edges] [CRATE_DIR...]
                          the module dependency graph of the workspace's crates (or those
                          named) and every circle in it; --edges lists a circle's edges;
                          --strict fails if there is one
  bench [--quick]         compile, then run the criterion benches (rtt, throughput, dma,
                          threads) and the latency example; write target/bench/report.json,
                          report.md and latency.svg/.png: every dpakit figure beside its
                          baselines, and the performance targets met or missed. --quick is a
                          smoke run of about two minutes, not a measurement
";

/// A failed task: the message is printed as `error: ...`.
type Result<T = (), E = String> = std::result::Result<T, E>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build-dpa") => parse_build_dpa(&args[1..]).and_then(|(kernels, with_dpacc)| {
            // Without dpacc there is nothing to hand off to: say so before building.
            let env = dpacc::Env::from_process();
            let toolchain = with_dpacc.then(|| dpacc::discover(&env)).transpose()?;
            let report = kernels.build()?;
            print!("{}", report.table());
            if let Some(toolchain) = toolchain {
                let program = dpacc::hand_off(&report, &toolchain, &env)?;
                println!("{}", dpacc::usage(&program));
            }
            Ok(())
        }),
        Some("soft-sdk") => parse_soft_sdk(&args[1..]).and_then(|(prefix, side)| {
            let prefix = soft_sdk::run_for(&prefix, side)?;
            println!(
                "soft DOCA SDK in {}
  build a DOCA program with: PKG_CONFIG_PATH={}/lib/pkgconfig \\
    cc prog.c $(pkg-config --cflags --libs doca-comch doca-dpa doca-common)",
                prefix.display(),
                prefix.display()
            );
            Ok(())
        }),
        Some("debug") => debug::Options::parse(&args[1..]).and_then(|opts| debug::run(&opts)),
        Some("dpa-top") => dpa_top::Options::parse(&args[1..]).and_then(|opts| dpa_top::run(&opts)),
        Some("new") => new_project::Options::parse(&args[1..]).and_then(|opts| {
            let name = new_project::run(&opts)?;
            println!(
                "{name} in {}: cd there, then
  cargo run --release            # the kernel on the soft device
  cargo run --release -- --isa   # from its DPA image (cargo builds and embeds it)
  cargo test",
                opts.dir.display()
            );
            Ok(())
        }),
        Some("test") => no_options(&args[1..]).and_then(|()| test::run()),
        Some("profile") => match &args[1..] {
            [] => profile::run(profile::Mode::Native),
            [flag] if flag == "--isa" => profile::run(profile::Mode::Isa),
            [flag] if flag == "--one-way" => profile::run(profile::Mode::OneWay),
            _ => Err(format!("profile: expected [--isa|--one-way]\n\n{USAGE}")),
        },
        Some("bench") => parse_bench(&args[1..]).and_then(|opts| bench::run(&opts)),
        Some("fuzz") => parse_fuzz(&args[1..]).and_then(|opts| fuzz::run(&opts)),
        Some("api") => match &args[1..] {
            [] => api::run(false),
            [flag] if flag == "--bless" => api::run(true),
            _ => Err(format!("api: expected [--bless]\n\n{USAGE}")),
        },
        Some("modules") => {
            let strict = args[1..].iter().any(|a| a == "--strict");
            let edges = args[1..].iter().any(|a| a == "--edges");
            let dirs: Vec<String> = args[1..]
                .iter()
                .filter(|a| !a.starts_with("--"))
                .cloned()
                .collect();
            modules::run(&dirs, strict, edges)
        }
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
        None => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// build-dpa's options, and whether to hand the result to dpacc.
fn parse_build_dpa(args: &[String]) -> Result<(Kernels, bool)> {
    let (mut release, mut with_dpacc, mut profile) = (false, false, false);
    for arg in args {
        match arg.as_str() {
            "--release" => release = true,
            "--dpacc" => with_dpacc = true,
            "--profile" => profile = true,
            other => return Err(format!("build-dpa: unknown option `{other}`\n\n{USAGE}")),
        }
    }
    let mut kernels = build_dpa::kit_kernels(release);
    if profile {
        kernels = build_dpa::with_isa_profile(kernels);
    }
    Ok((kernels, with_dpacc))
}

fn parse_soft_sdk(args: &[String]) -> Result<(PathBuf, soft_sdk::Side)> {
    let mut side = soft_sdk::Side::Host;
    let mut prefix = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().map(String::as_str)) {
            ("--prefix", Some(dir)) => prefix = Some(PathBuf::from(dir)),
            ("--side", Some("host")) => side = soft_sdk::Side::Host,
            ("--side", Some("arm")) => side = soft_sdk::Side::Arm,
            _ => {
                return Err(format!(
                    "soft-sdk: expected [--side host|arm] [--prefix DIR]\n\n{USAGE}"
                ));
            }
        }
    }
    Ok((
        prefix.unwrap_or_else(|| soft_sdk::default_prefix_for(side)),
        side,
    ))
}

fn parse_bench(args: &[String]) -> Result<bench::Options> {
    let mut opts = bench::Options::default();
    for arg in args {
        match arg.as_str() {
            "--quick" => opts.quick = true,
            other => return Err(format!("bench: unknown option `{other}`\n\n{USAGE}")),
        }
    }
    Ok(opts)
}

fn parse_fuzz(args: &[String]) -> Result<fuzz::Options> {
    let mut opts = fuzz::Options {
        time: fuzz::DEFAULT_TIME,
        targets: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--time" => {
                opts.time = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|&t| t > 0)
                    .ok_or_else(|| format!("fuzz: --time takes seconds\n\n{USAGE}"))?;
            }
            other if other.starts_with('-') => {
                return Err(format!("fuzz: unknown option `{other}`\n\n{USAGE}"));
            }
            target => opts.targets.push(target.to_string()),
        }
    }
    Ok(opts)
}

fn no_options(args: &[String]) -> Result {
    match args.first() {
        None => Ok(()),
        Some(other) => Err(format!("unknown option `{other}`\n\n{USAGE}")),
    }
}

/// The workspace root (the parent of xtask/).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}
