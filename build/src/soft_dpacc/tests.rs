//! The soft dpacc on a device source of its own: what it refuses, and what it makes.

use super::*;
use crate::tests::{kit_root, scratch_dir};
use object::{Object, ObjectSymbol};

/// The kit's headers stand in for an installed soft SDK (`<prefix>/include`).
fn prefix() -> PathBuf {
    kit_root().join("emu")
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

const DEVICE: &str = r#"
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_comch_msgq.h>

/* Not a kernel: __dpa_global__ in a comment is no marker. */
static uint64_t twice(uint64_t x) { return 2 * x; }

__dpa_global__ void hello_kernel(uint64_t arg)
{
	doca_dpa_dev_thread_reschedule();
}

__dpa_rpc__ uint64_t hello_rpc(uint64_t a, uint64_t b)
{
	return twice(a) + b;
}
"#;

#[test]
fn a_program_holds_the_kernels_the_app_and_an_image() {
    let dir = scratch_dir("soft-dpacc-program");
    let source = dir.join("device.c");
    std::fs::write(&source, DEVICE).unwrap();
    let output = dir.join("libhello_program.a");
    run(
        &args(&[
            source.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "-mcpu=nv-dpa-bf3",
            "-hostcc=cc",
            "--devicecc-options=-Wall -Werror",
            "--app-name=hello_app",
            "-device-libs=-ldoca_dpa_dev -ldoca_dpa_dev_comm",
        ]),
        &prefix(),
    )
    .unwrap();
    let data = std::fs::read(&output).unwrap();
    let archive = object::read::archive::ArchiveFile::parse(&*data).unwrap();
    let mut defined = Vec::new();
    for member in archive.members() {
        let member = member.unwrap();
        let obj = object::File::parse(member.data(&*data).unwrap()).unwrap();
        for sym in obj.symbols().filter(|s| s.is_global() && !s.is_undefined()) {
            defined.push(sym.name().unwrap().to_string());
        }
    }
    for symbol in ["hello_app", "hello_kernel", "hello_rpc"] {
        assert!(defined.iter().any(|d| d == symbol), "{symbol}: {defined:?}");
    }
    let image = dir.join("hello_app.elf");
    assert!(image.is_file(), "the DPA image beside the program");
    let app = std::fs::read_to_string(dir.join(".hello_app.dpacc/app.c")).unwrap();
    assert!(
        app.contains("DPAKIT_SOFT_RPC_KERNEL(hello_rpc, 2u)"),
        "{app}"
    );
    assert!(
        app.contains("DPAKIT_SOFT_THREAD_KERNEL(hello_kernel)"),
        "{app}"
    );
    assert!(app.contains("hello_app.elf\""), "{app}");
}

#[test]
fn what_the_soft_dpacc_cannot_do_is_refused_by_name() {
    let dir = scratch_dir("soft-dpacc-refusals");
    let source = dir.join("k.c");
    std::fs::write(&source, DEVICE).unwrap();
    let src = source.to_str().unwrap();
    let out = dir.join("libk.a");
    let out = out.to_str().unwrap();
    for (list, expected) in [
        (vec![src, "-o", out], "--app-name"),
        (vec![src, "--app-name=k"], "-o names no"),
        (vec![src, "-o", out, "--app-name=k-1"], "not a C identifier"),
        (
            vec![src, "-o", out, "--app-name=k", "-mcpu=nv-dpa-x"],
            "names no DPA",
        ),
        (
            vec![src, "k.o", "-o", out, "--app-name=k"],
            "not a C source",
        ),
        (vec![src, "-o", out, "--app-name=k", "-lfoo"], "-lfoo"),
        (vec![src, "-o", out, "--app-name=k", "--bogus"], "`--bogus`"),
    ] {
        let e = run(&args(&list), &prefix()).unwrap_err();
        assert!(e.contains(expected), "{list:?}: {e}");
    }
    let e = run(&args(&[src, "-o", out, "--app-name=k"]), &dir).unwrap_err();
    assert!(e.contains("no DOCA device headers"), "{e}");
    let plain = dir.join("plain.c");
    std::fs::write(&plain, "int nothing(void) { return 0; }\n").unwrap();
    let e = run(
        &args(&[plain.to_str().unwrap(), "-o", out, "--app-name=k"]),
        &prefix(),
    )
    .unwrap_err();
    assert!(e.contains("no kernel in the sources"), "{e}");
}

/// DOCA 3.x's sample scripts call dpacc with a list of DPAs, an attributes blob, a kept
/// directory, no assembly checks and the verbs device library: each is taken.
#[test]
fn the_command_line_of_doca_3_scripts_is_taken() {
    let dir = scratch_dir("soft-dpacc-doca3");
    let source = dir.join("device.c");
    std::fs::write(&source, DEVICE).unwrap();
    let blob = dir.join("sample_attributes.blob");
    std::fs::write(&blob, [0u8; 8]).unwrap();
    let keep = dir.join("kept");
    let output = dir.join("libsample_program.a");
    run(
        &args(&[
            source.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "-mcpu=nv-dpa-bf3,nv-dpa-cx7,nv-dpa-cx8,nv-dpa-cx9",
            "-hostcc=cc",
            "--app-name=dpa_sample_app",
            "-device-libs=-ldoca_dpa_dev -ldoca_dpa_dev_comm -ldoca_dpa_dev_verbs",
            "-flto",
            "-disable-asm-checks",
            "--keep-dir",
            keep.to_str().unwrap(),
            &format!("--dpa-proc-attr={}", blob.display()),
        ]),
        &prefix(),
    )
    .unwrap();
    assert!(output.exists());
    assert_eq!(
        std::fs::read(keep.join("attributes.blob")).unwrap(),
        [0u8; 8]
    );
    assert!(
        keep.join("app.c").exists(),
        "intermediates in the kept directory"
    );

    let src = source.to_str().unwrap();
    let out = output.to_str().unwrap();
    let odd = dir.join("odd.blob");
    std::fs::write(&odd, [0u8; 6]).unwrap();
    let verbs = dir.join("verbs.c");
    std::fs::write(
        &verbs,
        format!("{DEVICE}\nvoid doca_dpa_dev_verbs_post_send(void);\n"),
    )
    .unwrap();
    for (list, expected) in [
        (
            vec![src, "-o", out, "--app-name=k", "-mcpu=nv-dpa-bf3,nv-dpa-x"],
            "`nv-dpa-x` names no DPA",
        ),
        (
            vec![
                src,
                "-o",
                out,
                "--app-name=k",
                &format!("--dpa-proc-attr={}", odd.display()),
            ],
            "whole 32-bit words",
        ),
        (
            vec![
                src,
                "-o",
                out,
                "--app-name=k",
                "--dpa-proc-attr=/nonexistent",
            ],
            "--dpa-proc-attr /nonexistent",
        ),
        (
            vec![verbs.to_str().unwrap(), "-o", out, "--app-name=k"],
            "doca_dpa_dev_verbs_post_send",
        ),
    ] {
        let e = run(&args(&list), &prefix()).unwrap_err();
        assert!(e.contains(expected), "{list:?}: {e}");
    }
}

#[test]
fn the_descriptor_lists_each_kernel_and_escapes_the_image_path() {
    let kernels = [
        scan::Kernel {
            name: "k".into(),
            rpc: false,
            num_args: 1,
        },
        scan::Kernel {
            name: "z".into(),
            rpc: true,
            num_args: 0,
        },
    ];
    let src = app_source("app", &kernels, Some(Path::new("/a \"b\"/app.elf")));
    assert!(src.contains("void k(uint64_t);"), "{src}");
    assert!(src.contains("uint64_t z(void);"), "{src}");
    assert!(src.contains(r#""/a \"b\"/app.elf""#), "{src}");
    assert!(src.contains("struct doca_dpa_app *app = "), "{src}");
    // No build id: dpacc builds the host and device halves in one command.
    assert!(app_source("app", &kernels, None).contains("\tNULL, 0};"));
}
