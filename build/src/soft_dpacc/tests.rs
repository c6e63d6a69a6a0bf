//! The soft dpacc on a device source of its own: what it refuses, and what it makes.

use super::*;
use crate::tests::scratch_dir;
use object::{Object, ObjectSymbol};

/// The kit's headers stand in for an installed soft SDK (`<prefix>/include`): the directory
/// dpakit-doca-headers publishes is a prefix's `include/`.
fn prefix() -> PathBuf {
    Path::new(dpakit_doca_headers::INCLUDE_DIR)
        .parent()
        .expect("the published include directory is in OUT_DIR")
        .to_path_buf()
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
        app.contains("(const void *)hello_rpc, DPAKIT_SOFT_KERNEL_RPC, 2u, 0x0u}"),
        "{app}"
    );
    assert!(
        app.contains("(const void *)hello_kernel, DPAKIT_SOFT_KERNEL_THREAD, 1u, 0x0u}"),
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
            "a multiple of 4 from 4 to 1020",
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
            num_args: 3,
            narrow: 0b10,
        },
        scan::Kernel {
            name: "z".into(),
            rpc: true,
            num_args: 0,
            narrow: 0,
        },
    ];
    let src = app_source("app", &kernels, Some(Path::new("/a \"b\"/app.elf")));
    assert!(src.contains("void k(void);"), "{src}");
    assert!(
        src.contains(r#"{"k", (const void *)k, DPAKIT_SOFT_KERNEL_THREAD, 3u, 0x2u},"#),
        "{src}"
    );
    assert!(
        src.contains(r#"{"z", (const void *)z, DPAKIT_SOFT_KERNEL_RPC, 0u, 0x0u},"#),
        "{src}"
    );
    assert!(src.contains(r#""/a \"b\"/app.elf""#), "{src}");
    assert!(src.contains("struct doca_dpa_app *app = "), "{src}");
    // No build id: dpacc builds the host and device halves in one command.
    assert!(app_source("app", &kernels, None).contains("\tNULL, 0, NULL, 0};"));
}

/// Device code as DOCA 3.x samples write it: a kernel with no parameter, one launched with
/// arguments of both widths, `dpaintrin.h`'s counters and barriers, and a structure copy (which
/// the compiler turns into `memcpy`).
const DOCA_3_DEVICE: &str = r#"
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_sync_event.h>
#include <dpaintrin.h>

struct pair { uint64_t a, b, c, d, e, f; };

__dpa_global__ void hello_world(void)
{
	DOCA_DPA_DEV_LOG_INFO("hello from thread %u of %u\n", doca_dpa_dev_thread_rank(),
			      doca_dpa_dev_num_threads());
}

__dpa_global__ void wide(uint64_t out, doca_dpa_dev_mmap_t mmap, uint32_t n, uint64_t in)
{
	struct pair *dst = (struct pair *)out, *src = (struct pair *)in;
	uint64_t start = __dpa_thread_cycles();
	(void)mmap;
	__dpa_compiler_barrier();
	*dst = *src;
	__dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W);
	dst->a = n + (__dpa_thread_cycles() >= start) + (__dpa_thread_time() > 0);
	__builtin_memmove((char *)out + 1, (char *)out, n);
}
"#;

#[test]
fn doca_3_kernels_build_zero_and_many_parameters_intrinsics_and_struct_copies() {
    let dir = scratch_dir("soft-dpacc-doca3-kernels");
    let source = dir.join("device.c");
    std::fs::write(&source, DOCA_3_DEVICE).unwrap();
    let output = dir.join("libdoca3.a");
    run(
        &args(&[
            source.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "-mcpu=nv-dpa-bf3,nv-dpa-cx7,nv-dpa-cx8,nv-dpa-cx9",
            "-hostcc=cc",
            "--devicecc-options=-Wall -Wextra -Werror -O2",
            "--app-name=doca3_app",
            "-device-libs=-ldoca_dpa_dev -ldoca_dpa_dev_comm -ldoca_dpa_dev_verbs",
        ]),
        &prefix(),
    )
    .unwrap();
    let app = std::fs::read_to_string(dir.join(".doca3_app.dpacc/app.c")).unwrap();
    assert!(
        app.contains("(const void *)hello_world, DPAKIT_SOFT_KERNEL_THREAD, 0u, 0x0u}"),
        "{app}"
    );
    // mmap (a uint32_t typedef) and n are read as 32-bit arguments.
    assert!(
        app.contains("(const void *)wide, DPAKIT_SOFT_KERNEL_THREAD, 4u, 0x6u}"),
        "{app}"
    );
    // The copy of a size known at run time calls memmove, which the image then defines.
    let elf = std::fs::read(dir.join("doca3_app.elf")).unwrap();
    let elf = object::File::parse(&*elf).unwrap();
    assert!(
        elf.symbols()
            .any(|s| s.name() == Ok("memmove") && !s.is_undefined()),
        "the DPA image defines memmove"
    );
}
