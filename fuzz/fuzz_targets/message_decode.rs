//! `message_decode`: everything that turns bytes from a peer into values.
//!
//! The first input byte picks the decoder, the rest is its input:
//! - the shared ABI: `ImmMessage::from_bytes`, its typed views and opcode, `from_imm_bytes` of
//!   the kit's immediates, `checksum64` (32-byte round trip checked);
//! - the Comch wire protocol's `decode` (a decoded message re-encodes to the same bytes);
//! - a peer's fast-path consumer announcement (`CONSUMER_NEW` with its memory files, sealed
//!   or not, of any size) and one send into the ring the peer laid out (bytes of the input);
//! - the DPA app descriptor reader `App::from_symbol` over a fuzzed descriptor whose strings and
//!   kernel table lie in pages followed by an unmapped guard page.
//!
//! Errors are expected; a panic, crash or hang is a finding.
#![no_main]

use dpakit_abi::args::ServeState;
use dpakit_abi::{
    DmaOffloadDesc, Echo, ImmMessage, OffloadResult, PingPong, checksum64, from_imm_bytes,
};
use dpakit_wire::fuzzing::{SharedFiles, consumer_announcement, wire_message};
use libfuzzer_sys::fuzz_target;

mod support;
use support::Bytes;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => immediates(rest),
        1 => wire_message(rest),
        2 => announcement(rest),
        _ => app_descriptor(rest),
    }
});

fn immediates(bytes: &[u8]) {
    let _ = checksum64(bytes);
    let _ = from_imm_bytes::<ServeState>(bytes);
    let Ok(msg) = ImmMessage::from_bytes(bytes) else {
        assert!(bytes.len() > 32, "short immediates are zero-filled");
        return;
    };
    assert_eq!(&msg.as_bytes()[..bytes.len()], bytes);
    assert_eq!(ImmMessage::from_bytes(msg.as_bytes()), Ok(msg));
    let _ = msg.opcode();
    let _ = msg.view::<Echo>();
    let _ = msg.view::<PingPong>();
    let _ = msg.view::<DmaOffloadDesc>();
    let _ = msg.view::<OffloadResult>();
}

fn announcement(input: &[u8]) {
    let mut b = Bytes::new(input);
    let flags = b.u8();
    let msg_len = usize::from(b.u8());
    let msg = b.take(msg_len);
    // The files as the message announces them, or of other sizes.
    let field = |at: usize| {
        msg.get(at..at + 8).map_or(0, |f| {
            u64::from_le_bytes(f.try_into().unwrap_or([0; 8])) as usize
        })
    };
    let (mut ring_len, mut data_len) = (field(17).min(1 << 20), field(25).min(1 << 20));
    if flags & 8 != 0 {
        ring_len = usize::from(b.u16()) * 8;
        data_len = usize::from(b.u16()) * 8;
    }
    let imm_len = usize::from(b.u8() % 40);
    let imm = b.take(imm_len);
    let send_len = usize::from(b.u16() % 4096);
    let send = b.take(send_len);
    let files = SharedFiles {
        ring_len,
        ring: b.rest(),
        data_len,
        sealed: flags & 1 == 0,
        num_fds: usize::from(3 ^ (flags >> 1 & 3)),
        wake_socket: flags & 8 == 0,
    };
    let _ = consumer_announcement(msg, &files, send, imm);
}

/// Lays a `SoftApp` descriptor out from the input and reads it with `App::from_symbol`.
fn app_descriptor(input: &[u8]) {
    use dpakit_abi::kernel::{SoftApp, SoftKernel};
    let mut b = Bytes::new(input);
    // Two pages, then a guard page: strings that run off the end and tables that cross it are
    // refused, never read past. The input's tail fills the pages (the strings).
    let mut pages = support::GuardedPages::new(2);
    let heap = pages.bytes();
    let len = heap.len();
    let base = heap.as_mut_ptr() as usize;
    let end = base + len;
    // A pointer: NULL, into the pages (maybe near the guard), the guard itself, or a stray value.
    let pointer = |b: &mut Bytes<'_>| -> usize {
        match b.u8() % 5 {
            0 => 0,
            1 | 2 => base + usize::from(b.u16()) % len,
            3 => end - usize::from(b.u8()) % 64,
            _ => b.u64() as usize,
        }
    };
    let name = pointer(&mut b);
    let table = if b.bool() {
        base + ((usize::from(b.u16()) % len) & !7)
    } else {
        pointer(&mut b)
    };
    let num_kernels = match b.u8() % 4 {
        0 => u32::from(b.u8() % 8),
        1 => b.u32(),
        _ => u32::from(b.u8()),
    };
    let magic = if b.u8() < 250 {
        SoftApp::MAGIC
    } else {
        b.u64()
    };
    let version = match b.u8() {
        0..150 => SoftApp::VERSION,
        150..175 => SoftApp::VERSION_3,
        175..200 => SoftApp::VERSION_2,
        200..250 => SoftApp::VERSION_1,
        _ => b.u32(),
    };
    // Version 2's image path: none, or a pointer like the names.
    let image = if b.u8().is_multiple_of(2) {
        std::ptr::null()
    } else {
        pointer(&mut b) as *const _
    };
    // Version 3's build id: any value is one.
    let build_id = b.u64();
    // Version 4's embedded image: none, or a pointer like the names with any size (the image
    // is read only in ISA mode; the descriptor's reader must bound it).
    let (image_data, image_size) = if b.u8().is_multiple_of(2) {
        (std::ptr::null(), 0)
    } else {
        (pointer(&mut b) as *const u8, b.u64())
    };
    let straddle = b.u8().is_multiple_of(8);
    let at = base + ((usize::from(b.u16()) % (len - size_of::<SoftApp>())) & !7);
    let kernels: Vec<SoftKernel> = (0..num_kernels.min(16))
        .map(|_| SoftKernel {
            name: pointer(&mut b) as *const _,
            // Never called: descriptors are only read.
            entry: b.u64() as usize as *const _,
            kind: u32::from(b.u8() % 3),
            // Past the 16 a thread kernel may take, and narrow bits past the arguments.
            num_args: u16::from(b.u8() % 20),
            narrow_args: b.u16(),
        })
        .collect();
    let fill = b.rest();
    heap[..fill.len().min(len)].copy_from_slice(&fill[..fill.len().min(len)]);
    // Kernel entries where the table points into the pages, as far as they fit before the
    // guard.
    if (base..end).contains(&table) && table % align_of::<SoftKernel>() == 0 {
        let room = (end - table) / size_of::<SoftKernel>();
        for (i, k) in kernels.iter().take(room).enumerate() {
            // SAFETY: `room` whole entries fit between `table` and the guard page, and
            // `table` is aligned for them.
            unsafe { (table as *mut SoftKernel).add(i).write(*k) };
        }
    }
    let desc = SoftApp {
        magic,
        version,
        num_kernels,
        name: name as *const _,
        kernels: table as *const _,
        image,
        build_id,
        image_data,
        image_size,
    };
    let at = if straddle {
        // The descriptor itself running into the guard page.
        (end - size_of::<SoftApp>() / 2) & !7
    } else {
        // SAFETY: `at` is 8-aligned and a whole descriptor fits before the end of the pages.
        unsafe { (at as *mut SoftApp).write(desc) };
        at
    };
    if let Ok(app) = dpakit_model::dpa::App::from_symbol(at as *const _) {
        assert!(app.kernels().len() == num_kernels as usize);
    }
}
