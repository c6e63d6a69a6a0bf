//! DMA offload: the CPU sends descriptors, a DPA kernel DMA-copies between two mmaps and answers
//! with a checksum of what it read. Every destination byte and every checksum is verified.
//!
//! ```sh
//! cargo run --release --example dma_offload [-- COPIES]
//! ```

use dpakit::abi::args::DmaOffloadArgs;
use dpakit::abi::{DmaOffloadDesc, ImmMessage, OffloadResult, checksum64};
use dpakit::dpa::Dpa;
use dpakit::mmap::{AccessFlags, Mmap};
use dpakit::pe::Pe;
use dpakit::soft::SchedMode;
use dpakit::soft::SoftSettings;
use dpakit::{MsgqPath, kernels, kit_app, open_dpa_dev};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const REGION: usize = 4 << 20;

fn main() -> ExitCode {
    let copies: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000);
    match run(copies) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dma_offload failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// An mmap of REGION bytes the DPAs of `dev` may reach with `access`, filled by `fill` before
/// devices can reach it.
fn mmap(
    dev: &dpakit::dev::Dev,
    access: AccessFlags,
    fill: impl FnOnce(&mut [u8]),
) -> Result<Mmap, dpakit::Error> {
    let mut m = Mmap::alloc(REGION)?;
    m.set_permissions(access)?;
    m.add_dev(dev)?;
    fill(m.as_mut_slice()?);
    m.start()?;
    Ok(m)
}

fn run(copies: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dev = open_dpa_dev()?;
    let dpa = Dpa::builder(&dev)
        .app(kit_app())
        .sched_mode(SchedMode::BusyPoll)
        .workers(1)
        .start()?;
    let pe = Pe::new()?;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let src = mmap(&dev, AccessFlags::LOCAL_READ_ONLY, |bytes| {
        for b in bytes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    })?;
    let dst = mmap(&dev, AccessFlags::LOCAL_READ_WRITE, |_| {})?;
    // A DMA source: the DPA only reads it, so it may be viewed while started.
    let source = src.as_slice()?;
    let mut landed = vec![0u8; REGION];

    let (src_h, dst_h) = (dpa.mmap_handle(&src)?, dpa.mmap_handle(&dst)?);
    let (src_base, dst_base) = (src.range().0 as u64, dst.range().0 as u64);
    let path = MsgqPath::builder(&dpa, &pe, &kernels::DMA_OFFLOAD)
        .args(move |path| DmaOffloadArgs {
            path,
            src_mmap: src_h,
            dst_mmap: dst_h,
            src_base,
            src_len: REGION as u64,
            dst_base,
            dst_len: REGION as u64,
        })
        .start()?;

    let (mut bytes, mut mismatches) = (0u64, 0u64);
    let start = Instant::now();
    for seq in 0..copies {
        // Sizes from 64 B to 1 MiB at varying offsets.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let length = 64u64 << (x % 15);
        let src_offset = (x >> 8) % (REGION as u64 - length);
        let dst_offset = (x >> 32) % (REGION as u64 - length);
        let desc = DmaOffloadDesc {
            src_offset,
            dst_offset,
            length,
        };
        let reply =
            path.round_trip(&ImmMessage::new(seq as u32, &desc), Duration::from_secs(10))?;
        let result: OffloadResult = reply.msg.view()?;
        let expected = &source[src_offset as usize..(src_offset + length) as usize];
        // The copy completed before its immediate arrived.
        let landed = &mut landed[..length as usize];
        dst.read_at(dst_offset as usize, landed)?;
        if result.status != 0 || result.checksum != checksum64(expected) || landed != expected {
            mismatches += 1;
        }
        bytes += length;
    }
    let elapsed = start.elapsed();
    dpa.check()?;
    println!(
        "dma_offload: {copies} copies, {:.1} MiB, {mismatches} mismatches, {:.2} GiB/s including checksums",
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / elapsed.as_secs_f64() / (1u64 << 30) as f64
    );
    if mismatches > 0 {
        return Err(format!("{mismatches} copies did not match their source").into());
    }
    Ok(())
}
