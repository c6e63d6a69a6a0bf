//! The C header must describe exactly the Rust layouts: this test writes the Rust sizes and
//! offsets into `_Static_assert`s and has clang check them against `include/dpakit_abi.h`, once
//! for the DPA (riscv64imac) and once for the host.

use dpakit_abi::args::{DmaOffloadArgs, MsgqPathArgs, RankedPathArgs, ServeState};
use dpakit_abi::{
    DmaOffloadDesc, Echo, ErrorCode, ImmMessage, MsgHeader, OffloadResult, Opcode, PingPong,
    submit_flag,
};
use memoffset::offset_of;
use std::fmt::Write as _;
use std::mem::{align_of, size_of};
use std::path::Path;
use std::process::Command;

fn layout_checks() -> String {
    let mut c = String::from("#include \"dpakit_abi.h\"\n");
    let mut check = |expr: String, value: usize| {
        writeln!(
            c,
            "_Static_assert({expr} == {value}, \"{expr} differs from Rust\");"
        )
        .unwrap();
    };
    macro_rules! layout {
        ($c_name:literal, $ty:ty { $($field:ident),* }) => {
            check(format!("sizeof(struct {})", $c_name), size_of::<$ty>());
            check(format!("_Alignof(struct {})", $c_name), align_of::<$ty>());
            $( check(format!("offsetof(struct {}, {})", $c_name, stringify!($field)), offset_of!($ty, $field)); )*
        };
    }
    layout!("dpakit_msg_header", MsgHeader { opcode, flags, seq });
    layout!("dpakit_imm_message", ImmMessage { header, payload });
    layout!(
        "dpakit_echo",
        Echo {
            token,
            timestamp_ns,
            tag
        }
    );
    layout!(
        "dpakit_ping_pong",
        PingPong {
            count,
            started_ns,
            tag
        }
    );
    layout!(
        "dpakit_dma_offload_desc",
        DmaOffloadDesc {
            src_offset,
            dst_offset,
            length
        }
    );
    layout!(
        "dpakit_offload_result",
        OffloadResult {
            status,
            reserved,
            length,
            checksum
        }
    );
    layout!(
        "dpakit_msgq_path_args",
        MsgqPathArgs {
            consumer_completion,
            consumer,
            producer,
            producer_completion,
            cpu_consumer_id,
            submit_flags
        }
    );
    layout!(
        "dpakit_serve_state",
        ServeState {
            report_every,
            sends
        }
    );
    layout!(
        "dpakit_dma_offload_args",
        DmaOffloadArgs {
            path,
            src_mmap,
            dst_mmap,
            src_base,
            src_len,
            dst_base,
            dst_len
        }
    );
    layout!(
        "dpakit_ranked_path_args",
        RankedPathArgs {
            path,
            rank,
            reserved
        }
    );
    check(
        "DPAKIT_SUBMIT_FLAG_FLUSH".into(),
        submit_flag::FLUSH as usize,
    );
    check(
        "DPAKIT_SUBMIT_FLAG_OPTIMIZE_REPORTS".into(),
        submit_flag::OPTIMIZE_REPORTS as usize,
    );
    check("DPAKIT_OP_ECHO".into(), Opcode::Echo as usize);
    check("DPAKIT_OP_PING_PONG".into(), Opcode::PingPong as usize);
    check("DPAKIT_OP_DMA_OFFLOAD".into(), Opcode::DmaOffload as usize);
    check(
        "DPAKIT_OP_OFFLOAD_RESULT".into(),
        Opcode::OffloadResult as usize,
    );
    check(
        "DPAKIT_DMA_OFFLOAD_FLAG_NO_CHECKSUM".into(),
        DmaOffloadDesc::FLAG_NO_CHECKSUM as usize,
    );
    check(
        "DPAKIT_STATUS_INVALID_VALUE".into(),
        ErrorCode::InvalidValue.raw() as usize,
    );
    c
}

fn clang_check(target_args: &[&str]) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-header");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("layout_check.c");
    std::fs::write(&source, layout_checks()).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let output = Command::new("clang")
        .args(target_args)
        .args(["-std=c11", "-Wall", "-Werror", "-fsyntax-only", "-I"])
        .arg(&include)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run clang ({e}): `cargo xtask test` installs it, or run \
                 `apt-get install clang`"
            )
        });
    assert!(
        output.status.success(),
        "include/dpakit_abi.h disagrees with the Rust layouts ({target_args:?}):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn header_matches_rust_layouts_on_the_dpa() {
    clang_check(&[
        "--target=riscv64-unknown-elf",
        "-march=rv64imac",
        "-mabi=lp64",
        "-ffreestanding",
    ]);
}

#[test]
fn header_matches_rust_layouts_on_the_host() {
    clang_check(&[]);
}
