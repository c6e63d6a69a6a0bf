//! The DMA-offload kernel: copy a range between two mmaps and report a checksum of what was read.

use dpakit_dev::abi::args::DmaOffloadArgs;
use dpakit_dev::abi::{DmaOffloadDesc, ErrorCode, ImmMessage, OffloadResult, checksum64};
use dpakit_dev::comch::DmaCopy;
use dpakit_dev::serve::serve;
use dpakit_dev::{mmap, thread_kernel};

/// Source and destination addresses of a descriptor, or why it is refused.
fn plan(args: &DmaOffloadArgs, desc: &DmaOffloadDesc) -> Result<(u64, u64), ErrorCode> {
    let fits = |offset: u64, range: u64| {
        offset
            .checked_add(desc.length)
            .is_some_and(|end| end <= range)
    };
    if !fits(desc.src_offset, args.src_len) || !fits(desc.dst_offset, args.dst_len) {
        return Err(ErrorCode::InvalidValue);
    }
    Ok((
        args.src_base + desc.src_offset,
        args.dst_base + desc.dst_offset,
    ))
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
                plan(args, &desc).map(|addrs| (desc, addrs))
            });
            match planned {
                Ok((desc, (src_addr, dst_addr))) => {
                    let checksum = if request.header.flags & DmaOffloadDesc::FLAG_NO_CHECKSUM != 0 {
                        0
                    } else {
                        let src = mmap::external_ptr(args.src_mmap, src_addr);
                        // SAFETY: plan() proved [src_addr, +length) lies inside the source range
                        // the host registered, and the external pointer maps it for reading.
                        let data = unsafe { core::slice::from_raw_parts(src.raw() as usize as *const u8, desc.length as usize) };
                        checksum64(data)
                    };
                    let result = OffloadResult { status: 0, reserved: 0, length: desc.length, checksum };
                    let copy = DmaCopy {
                        dst_mmap: args.dst_mmap,
                        dst_addr,
                        src_mmap: args.src_mmap,
                        src_addr,
                        length: desc.length as usize,
                    };
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
