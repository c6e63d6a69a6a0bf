//! The DMA-offload kernel: copy a range between two mmaps and report a checksum of what was read.

use dpakit_dev::abi::args::DmaOffloadArgs;
use dpakit_dev::abi::{DmaOffloadDesc, ErrorCode, ImmMessage, OffloadResult, checksum64};
use dpakit_dev::comch::DmaCopy;
use dpakit_dev::mmap::HostMem;
use dpakit_dev::serve::serve;
use dpakit_dev::thread_kernel;

/// The source and destination of a descriptor inside the ranges the host handed over, or why it
/// is refused.
fn plan(args: &DmaOffloadArgs, desc: &DmaOffloadDesc) -> Result<(HostMem, HostMem), ErrorCode> {
    let src = HostMem::from_parts(args.src_mmap, args.src_base, args.src_len);
    let dst = HostMem::from_parts(args.dst_mmap, args.dst_base, args.dst_len);
    match (
        src.sub(desc.src_offset, desc.length),
        dst.sub(desc.dst_offset, desc.length),
    ) {
        (Some(src), Some(dst)) => Ok((src, dst)),
        _ => Err(ErrorCode::InvalidValue),
    }
}

thread_kernel! {
    /// For each [`DmaOffloadDesc`]: checks the ranges, computes [`checksum64`] over the source
    /// bytes read through the mmap's device pointer (unless the header carries
    /// `FLAG_NO_CHECKSUM`), DMA-copies them to the destination, and replies (as the copy's
    /// immediate) with an [`OffloadResult`] carrying the checksum. A descriptor outside the ranges
    /// is answered with status `DOCA_ERROR_INVALID_VALUE` and no copy.
    pub DMA_OFFLOAD: fn dma_offload(args: &DmaOffloadArgs) {
        let path = &args.path;
        serve(path, |msg, producer, flags| {
            let request = msg.message();
            let seq = request.header.seq;
            let planned = request.view::<DmaOffloadDesc>().map_err(|_| ErrorCode::InvalidValue).and_then(|desc| {
                plan(args, &desc).map(|ranges| (desc, ranges))
            });
            match planned {
                Ok((desc, (src, dst))) => {
                    let checksum = if request.header.flags & DmaOffloadDesc::FLAG_NO_CHECKSUM != 0 {
                        0
                    } else {
                        src.with_bytes(checksum64)
                    };
                    let result = OffloadResult { status: 0, reserved: 0, length: desc.length, checksum };
                    // Same length by construction: both are `desc.length` bytes.
                    let Some(copy) = DmaCopy::between(&dst, &src) else { return };
                    // A 32-byte ImmMessage always fits.
                    let _ = producer.dma_copy(path.cpu_consumer_id, copy, ImmMessage::new(seq, &result).as_bytes(), flags);
                }
                Err(code) => {
                    let result = OffloadResult { status: code.raw() as u32, ..OffloadResult::default() };
                    producer.send(path.cpu_consumer_id, &ImmMessage::new(seq, &result), flags);
                }
            }
        })
    }
}
