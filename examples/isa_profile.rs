//! The cost model: instructions per message of every kit kernel, counted by the soft device's
//! interpreter running the DPA image (ISA mode). `cargo xtask build-dpa --profile` runs this
//! and puts the figures in report.json.
//!
//! Deterministic scheduling runs one activation per message, so the counts are exact and
//! repeat from run to run. Device calls are counted apart: their cost on the DPA is DOCA's.
//!
//! ```sh
//! cargo run --release --example isa_profile [-- [--json] [--image PATH] [MESSAGES]]
//! ```

use dpakit::abi::args::{DmaOffloadArgs, MsgqPathArgs, RankedPathArgs};
use dpakit::abi::{DmaOffloadDesc, Echo, ImmMessage, OffloadResult, PingPong, Pod};
use dpakit::dpa::Dpa;
use dpakit::mmap::{AccessFlags, Mmap};
use dpakit::pe::Pe;
use dpakit::soft::SoftSettings;
use dpakit::soft::{ExecMode, IsaProfile, SchedMode};
use dpakit::{MsgqPath, ThreadKernel, kernels, kit_app, open_dpa_dev};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

type Error = Box<dyn std::error::Error>;

/// One kernel's figures.
struct Row {
    kernel: &'static str,
    workload: &'static str,
    messages: u64,
    profile: IsaProfile,
}

fn main() -> ExitCode {
    let mut json = false;
    let mut image = None;
    let mut messages = 1_000u64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--image" => image = args.next().map(PathBuf::from),
            n => match n.parse() {
                Ok(n) if n > 0 => messages = n,
                _ => {
                    eprintln!("usage: isa_profile [--json] [--image PATH] [MESSAGES]");
                    return ExitCode::FAILURE;
                }
            },
        }
    }
    // The image the kit's app embeds, unless one is named (`build-dpa --profile` names the one
    // it just linked).
    let rows = profile_all(image.as_deref(), messages);
    match rows {
        Ok(rows) if json => {
            println!("{}", to_json(&rows));
            ExitCode::SUCCESS
        }
        Ok(rows) => {
            print!("{}", to_table(&rows));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("isa_profile failed: {e}");
            ExitCode::FAILURE
        }
    }
}

const T: Duration = Duration::from_secs(10);

fn dpa(image: Option<&Path>) -> Result<Dpa, Error> {
    let mut dpa = Dpa::builder(&open_dpa_dev()?)
        .app(kit_app())
        .sched_mode(SchedMode::Deterministic { seed: 1 })
        .exec_mode(ExecMode::Isa);
    if let Some(image) = image {
        dpa = dpa.isa_image(image);
    }
    Ok(dpa.start()?)
}

fn profile_all(image: Option<&Path>, n: u64) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    for kernel in [&kernels::ECHO, &kernels::ECHO_C] {
        rows.push(echo_like(image, kernel, |path| path, n)?);
    }
    let ranked = |path| RankedPathArgs {
        path,
        rank: 0,
        reserved: 0,
    };
    rows.push(echo_like(image, &kernels::RANKED_ECHO, ranked, n)?);
    rows.push(ping_pong(image, n)?);
    for kernel in [&kernels::DMA_OFFLOAD, &kernels::DMA_OFFLOAD_C] {
        rows.push(dma_offload(image, kernel, n)?);
    }
    rows.push(sink(image, n)?);
    Ok(rows)
}

fn row<A>(
    kernel: &ThreadKernel<A>,
    workload: &'static str,
    n: u64,
    path: &MsgqPath,
) -> Result<Row, Error> {
    Ok(Row {
        kernel: kernel.name(),
        workload,
        messages: n,
        profile: path.thread().isa_profile()?,
    })
}

fn echo_like<A: Pod>(
    image: Option<&Path>,
    kernel: &ThreadKernel<A>,
    args: impl FnOnce(MsgqPathArgs) -> A + 'static,
    n: u64,
) -> Result<Row, Error> {
    let dpa = dpa(image)?;
    let pe = Pe::new()?;
    let path = MsgqPath::builder(&dpa, &pe, kernel).args(args).start()?;
    for i in 0..n {
        let sent = ImmMessage::new(
            i as u32,
            &Echo {
                token: i,
                ..Echo::default()
            },
        );
        let reply = path.round_trip(&sent, T)?;
        if reply.msg.view::<Echo>()?.token != i {
            return Err(format!("{}: wrong reply to message {i}", kernel.name()).into());
        }
    }
    dpa.check()?;
    row(kernel, "32-byte echo round trip", n, &path)
}

fn ping_pong(image: Option<&Path>, n: u64) -> Result<Row, Error> {
    let dpa = dpa(image)?;
    let pe = Pe::new()?;
    let path = MsgqPath::builder(&dpa, &pe, &kernels::PING_PONG).start()?;
    let mut ball = PingPong::default();
    for i in 0..n {
        ball = path
            .round_trip(&ImmMessage::new(i as u32, &ball), T)?
            .msg
            .view()?;
    }
    if ball.count != n {
        return Err(format!("ping_pong counted {} legs of {n}", ball.count).into());
    }
    row(&kernels::PING_PONG, "ping-pong leg", n, &path)
}

fn dma_offload(
    image: Option<&Path>,
    kernel: &ThreadKernel<DmaOffloadArgs>,
    n: u64,
) -> Result<Row, Error> {
    const LEN: usize = 4096;
    let dpa = dpa(image)?;
    let pe = Pe::new()?;
    let mmap = |flags| -> Result<Mmap, Error> {
        let mut m = Mmap::alloc(LEN)?;
        m.set_permissions(flags)?;
        m.add_dev(dpa.dev())?;
        m.start()?;
        Ok(m)
    };
    let (src, dst) = (
        mmap(AccessFlags::LOCAL_READ_ONLY)?,
        mmap(AccessFlags::LOCAL_READ_WRITE)?,
    );
    let (src_mmap, dst_mmap) = (dpa.mmap_handle(&src)?, dpa.mmap_handle(&dst)?);
    let (src_base, dst_base) = (src.range().0 as u64, dst.range().0 as u64);
    let path = MsgqPath::builder(&dpa, &pe, kernel)
        .args(move |path| DmaOffloadArgs {
            path,
            src_mmap,
            dst_mmap,
            src_base,
            src_len: LEN as u64,
            dst_base,
            dst_len: LEN as u64,
        })
        .start()?;
    let desc = DmaOffloadDesc {
        src_offset: 0,
        dst_offset: 0,
        length: LEN as u64,
    };
    for i in 0..n {
        let result: OffloadResult = path
            .round_trip(&ImmMessage::new(i as u32, &desc), T)?
            .msg
            .view()?;
        if result.status != 0 {
            return Err(format!("{}: status {}", kernel.name(), result.status).into());
        }
    }
    row(kernel, "4 KiB DMA copy + checksum reply", n, &path)
}

fn sink(image: Option<&Path>, n: u64) -> Result<Row, Error> {
    let dpa = dpa(image)?;
    let pe = Pe::new()?;
    let path = MsgqPath::builder(&dpa, &pe, &kernels::SINK)
        .depth(16)
        .start()?;
    for i in 0..n {
        path.send_msg(&ImmMessage::new(i as u32, &PingPong::default()))?;
    }
    let deadline = std::time::Instant::now() + T;
    while path.kernel_state()?.sends < n as u32 {
        path.pe().progress();
        if std::time::Instant::now() > deadline {
            return Err("the sink stalled".into());
        }
    }
    row(&kernels::SINK, "one-way message", n, &path)
}

fn per(v: u64, n: u64) -> f64 {
    v as f64 / n as f64
}

fn to_table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<16} {:>14} {:>14} {:>14}  {}\n",
        "kernel", "instr/message", "calls/message", "instr/activ.", "workload"
    );
    for r in rows {
        let p = &r.profile;
        out += &format!(
            "{:<16} {:>14.1} {:>14.1} {:>14.1}  {}\n",
            r.kernel,
            per(p.instructions, r.messages),
            per(p.device_calls(), r.messages),
            per(p.instructions, p.activations.max(1)),
            r.workload
        );
    }
    out
}

fn to_json(rows: &[Row]) -> String {
    let entries: Vec<String> = rows
        .iter()
        .map(|r| {
            let p = &r.profile;
            let calls: Vec<String> = p
                .calls
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(name, n)| format!("\"{name}\": {:.3}", per(*n, r.messages)))
                .collect();
            format!(
                "{{\"kernel\": \"{}\", \"workload\": \"{}\", \"messages\": {}, \
                 \"activations\": {}, \"instructions_per_message\": {:.1}, \
                 \"device_calls_per_message\": {:.2}, \"max_instructions_per_activation\": {}, \
                 \"calls_per_message\": {{{}}}}}",
                r.kernel,
                r.workload,
                r.messages,
                p.activations,
                per(p.instructions, r.messages),
                per(p.device_calls(), r.messages),
                p.max_instructions,
                calls.join(", ")
            )
        })
        .collect();
    format!("[{}]", entries.join(", "))
}
