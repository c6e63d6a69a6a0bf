//! `doca_dpa_app`: the kernels a DPA program holds, from a Rust app or from the descriptor a
//! `struct doca_dpa_app *` points at (read with every pointer it follows checked).

use crate::error::{Result, bail};
use dpakit_abi::kernel::{KERNEL_MAX_ARGS, RPC_MAX_ARGS, SoftApp, SoftKernel};
use dpakit_abi::{RpcKernel, RpcSignature, ThreadKernel};

/// Whether a kernel runs as a DPA thread or as an RPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// `void kernel(uint64_t arg)`, run by `doca_dpa_thread`s.
    Thread,
    /// `uint64_t kernel(uint64_t…)`, run once by `doca_dpa_rpc`.
    Rpc,
}

/// One kernel of an [`App`]: its name and its host-compiled entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppKernel {
    /// The kernel's symbol name.
    pub name: &'static str,
    /// The address host code passes as `doca_dpa_func_t *`.
    pub entry: usize,
    /// Thread or RPC.
    pub kind: KernelKind,
    /// Arguments the kernel takes.
    pub num_args: u32,
    /// Bit `i` set: argument `i` is a 32-bit integer (a variadic launch reads it as one).
    pub narrow_args: u32,
}

impl AppKernel {
    /// `INVALID_VALUE` unless `given` is the number of arguments the kernel takes: an RPC and
    /// a launch pass exactly that many.
    pub(crate) fn require_args(&self, given: usize) -> Result<()> {
        if given != self.num_args as usize {
            let kind = match self.kind {
                KernelKind::Thread => "kernel",
                KernelKind::Rpc => "RPC kernel",
            };
            bail!(
                InvalidValue,
                "{kind} `{}` takes {} arguments, not {given}",
                self.name,
                self.num_args
            );
        }
        Ok(())
    }
}

/// `doca_dpa_app`: the kernels a DPA program contains. Threads and RPCs may only run kernels the
/// app lists, as on the device, where a function outside the app does not exist.
#[derive(Clone, Debug, Default)]
pub struct App {
    name: &'static str,
    kernels: Vec<AppKernel>,
    /// The app's DPA image (riscv64), which ISA mode runs, when the app names one.
    image: Option<std::path::PathBuf>,
    /// The image itself, when the program embeds it (a kernel crate built by
    /// `dpakit_build::kernel_crate`): run before `image` is looked at.
    image_data: Option<std::sync::Arc<[u8]>>,
    /// The build id of the kernel sources the app's host-compiled kernels come from (0: none);
    /// ISA mode runs only an image carrying the same.
    build_id: u64,
}

/// The largest DPA image a descriptor may embed: far above any app's (the kit's is about
/// 110 KiB), and a bound on what a stray size makes the reader copy.
pub const MAX_EMBEDDED_IMAGE: u64 = 64 << 20;

/// The image a version-4 descriptor at `app` embeds (its `image_data` and `image_size`), copied
/// with the read checked.
fn read_image_data(app: *const std::ffi::c_void) -> Result<Option<std::sync::Arc<[u8]>>> {
    use crate::checked_read::{read_array, read_value};
    let field = |offset: usize| app.cast::<u8>().wrapping_add(offset);
    // SAFETY: a pointer and a u64 are valid for any bits; the reads are checked.
    let (data, size) = unsafe {
        (
            read_value(
                field(std::mem::offset_of!(SoftApp, image_data)).cast::<*const u8>(),
                "the DPA app's embedded image",
            )?,
            read_value(
                field(std::mem::offset_of!(SoftApp, image_size)).cast::<u64>(),
                "the DPA app's embedded image size",
            )?,
        )
    };
    if data.is_null() || size == 0 {
        return Ok(None);
    }
    if size > MAX_EMBEDDED_IMAGE {
        bail!(
            InvalidValue,
            "the DPA app embeds an image of {size} bytes (at most {MAX_EMBEDDED_IMAGE})"
        );
    }
    // SAFETY: bytes are valid for any bits; the read is checked.
    let bytes = unsafe { read_array(data, size as usize, "the DPA app's embedded image") }?;
    Ok(Some(bytes.into()))
}

impl App {
    /// An app named `name` (the DOCA app symbol, e.g. `dpakit_kernels`).
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            kernels: Vec::new(),
            image: None,
            image_data: None,
            build_id: 0,
        }
    }

    /// Names the app's DPA image: the riscv64 executable `cargo xtask build-dpa` links, which the
    /// soft device runs in ISA mode.
    pub fn image(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.image = Some(path.into());
        self
    }

    /// The DPA image the app names, if any.
    pub fn image_path(&self) -> Option<&std::path::Path> {
        self.image.as_deref()
    }

    /// Embeds the app's DPA image: ISA mode runs these bytes rather than reading a file.
    pub fn image_data(mut self, data: impl Into<std::sync::Arc<[u8]>>) -> Self {
        self.image_data = Some(data.into());
        self
    }

    /// The DPA image the app embeds, if any.
    pub fn embedded_image(&self) -> Option<&[u8]> {
        self.image_data.as_deref()
    }

    /// Sets the build id of the kernel sources the app's kernels were compiled from (what
    /// `dpa_app!` records; 0: none): ISA mode then refuses an image built from other sources.
    pub fn with_build_id(mut self, id: u64) -> Self {
        self.build_id = id;
        self
    }

    /// The build id of the app's kernel sources, if it has one.
    pub fn build_id(&self) -> Option<u64> {
        (self.build_id != 0).then_some(self.build_id)
    }

    /// Adds a thread kernel (of any argument type: the model deals in raw `u64`s).
    pub fn thread_kernel<A>(mut self, kernel: &ThreadKernel<A>) -> Self {
        self.kernels.push(AppKernel {
            name: kernel.name(),
            entry: kernel.func() as usize,
            kind: KernelKind::Thread,
            num_args: 1,
            narrow_args: 0,
        });
        self
    }

    /// Adds an RPC kernel.
    pub fn rpc_kernel<F: RpcSignature, A, R>(mut self, kernel: &RpcKernel<F, A, R>) -> Self {
        self.kernels.push(AppKernel {
            name: kernel.name(),
            entry: kernel.func() as usize,
            kind: KernelKind::Rpc,
            num_args: F::NUM_ARGS as u32,
            narrow_args: 0,
        });
        self
    }

    /// The app a `struct doca_dpa_app *` names on the soft device: a [`SoftApp`] descriptor,
    /// read without trusting the pointer (`INVALID_VALUE` for anything that is not one).
    pub fn from_symbol(app: *const std::ffi::c_void) -> Result<App> {
        use crate::checked_read::{intern, read_array, read_c_string, read_value};
        // The fields every version has; `image` follows from version 2 on, `build_id` from 3,
        // `image_data` and `image_size` from 4.
        #[derive(Clone, Copy)]
        #[repr(C)]
        struct Header {
            magic: u64,
            version: u32,
            num_kernels: u32,
            name: *const std::ffi::c_char,
            kernels: *const SoftKernel,
        }
        const _: () = assert!(
            std::mem::offset_of!(SoftApp, image) == size_of::<Header>()
                && std::mem::offset_of!(SoftApp, kernels) == std::mem::offset_of!(Header, kernels)
        );
        let header = app.cast::<Header>();
        // SAFETY: Header holds integers and raw pointers, valid for any bits.
        let desc = unsafe { read_value(header, "the DPA app") }?;
        if desc.magic != SoftApp::MAGIC {
            bail!(
                InvalidValue,
                "{app:p} is not a DPA app of the soft device (no dpakit app descriptor there): \
                 pass the app symbol of a dpakit app library (dpa_app!, DPAKIT_SOFT_APP or \
                 `cargo xtask build-dpa`)"
            );
        }
        if !matches!(
            desc.version,
            SoftApp::VERSION_1 | SoftApp::VERSION_2 | SoftApp::VERSION_3 | SoftApp::VERSION
        ) {
            bail!(
                UnsupportedVersion,
                "DPA app descriptor version {} is not one this soft device reads (1 to {}): \
                 rebuild the app with this dpakit",
                desc.version,
                SoftApp::VERSION
            );
        }
        let image = if desc.version >= 2 {
            // SAFETY: a pointer is valid for any bits; the read is checked.
            let path = unsafe {
                read_value(
                    app.cast::<u8>()
                        .wrapping_add(size_of::<Header>())
                        .cast::<*const std::ffi::c_char>(),
                    "the DPA app's image",
                )
            }?;
            (!path.is_null())
                .then(|| {
                    crate::checked_read::read_c_string_limited(
                        path,
                        4096,
                        "the DPA app's image path",
                    )
                })
                .transpose()?
                .map(std::path::PathBuf::from)
        } else {
            None
        };
        let build_id = if desc.version >= SoftApp::VERSION_3 {
            // SAFETY: a u64 is valid for any bits; the read is checked.
            unsafe {
                read_value(
                    app.cast::<u8>()
                        .wrapping_add(std::mem::offset_of!(SoftApp, build_id))
                        .cast::<u64>(),
                    "the DPA app's build id",
                )
            }?
        } else {
            0
        };
        let image_data = if desc.version >= SoftApp::VERSION {
            read_image_data(app)?
        } else {
            None
        };
        if desc.num_kernels > 4096 {
            bail!(
                InvalidValue,
                "DPA app claims {} kernels (at most 4096)",
                desc.num_kernels
            );
        }
        let name = intern(&read_c_string(desc.name, "the DPA app's name")?);
        let raw = {
            #[derive(Clone, Copy, Default)]
            #[repr(C)]
            struct Raw([usize; 3]);
            const _: () = assert!(size_of::<Raw>() == size_of::<SoftKernel>());
            // SAFETY: Raw is plain integers of SoftKernel's size and alignment.
            unsafe {
                read_array(
                    desc.kernels.cast::<Raw>(),
                    desc.num_kernels as usize,
                    "the DPA app's kernels",
                )
            }?
        };
        let mut kernels = Vec::with_capacity(raw.len());
        for (i, r) in raw.iter().enumerate() {
            // SAFETY: Raw and SoftKernel have the same size; SoftKernel is integers and pointers.
            let k: SoftKernel = unsafe { std::mem::transmute(*r) };
            let kname = intern(&read_c_string(k.name, "a kernel name of the DPA app")?);
            let max = match k.kind {
                SoftKernel::THREAD => KERNEL_MAX_ARGS,
                SoftKernel::RPC => RPC_MAX_ARGS,
                _ => bail!(
                    InvalidValue,
                    "kernel {i} (`{kname}`) of DPA app `{name}` has kind {}: a kernel is a \
                     thread kernel ({}) or an RPC ({})",
                    k.kind,
                    SoftKernel::THREAD,
                    SoftKernel::RPC
                ),
            };
            let kind = if k.kind == SoftKernel::THREAD {
                KernelKind::Thread
            } else {
                KernelKind::Rpc
            };
            if k.num_args as usize > max || (u32::from(k.narrow_args) >> k.num_args.min(16)) != 0 {
                bail!(
                    InvalidValue,
                    "kernel {i} (`{kname}`) of DPA app `{name}` takes {} arguments (narrow mask \
                     {:#x}): a thread kernel takes at most {KERNEL_MAX_ARGS}, an RPC at most \
                     {RPC_MAX_ARGS}, and only those can be narrow",
                    k.num_args,
                    k.narrow_args
                );
            }
            if k.entry.is_null() {
                bail!(
                    InvalidValue,
                    "kernel `{kname}` of DPA app `{name}` has no entry"
                );
            }
            kernels.push(AppKernel {
                name: kname,
                entry: k.entry as usize,
                kind,
                num_args: k.num_args.into(),
                narrow_args: k.narrow_args.into(),
            });
        }
        Ok(App {
            name,
            kernels,
            image,
            image_data,
            build_id,
        })
    }

    /// The app's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Every kernel of the app.
    pub fn kernels(&self) -> &[AppKernel] {
        &self.kernels
    }

    /// The kernel of `kind` at `entry`, if the app has one.
    pub fn kernel(&self, entry: usize, kind: KernelKind) -> Option<&AppKernel> {
        self.kernels
            .iter()
            .find(|k| k.entry == entry && k.kind == kind)
    }

    /// `NOT_FOUND` naming the app when it has no kernel of `kind` at `entry`.
    pub(crate) fn require(&self, entry: usize, kind: KernelKind) -> Result<&AppKernel> {
        self.kernel(entry, kind).ok_or_else(|| {
            let named = self
                .kernels
                .iter()
                .find(|k| k.entry == entry)
                .map(|k| {
                    format!(
                        " (`{}` is a{} kernel)",
                        k.name,
                        match k.kind {
                            KernelKind::Thread => " thread",
                            KernelKind::Rpc => "n RPC",
                        }
                    )
                })
                .unwrap_or_default();
            // A function the app does not list is named as what it is on the host.
            let what = match super::symbol::host_function(entry) {
                Some(function) if named.is_empty() => format!("`{function}` ({entry:#x})"),
                _ => format!("{entry:#x}"),
            };
            crate::error::err(
                crate::error::ErrorCode::NotFound,
                format!(
                    "{what} is not {} kernel of DPA app `{}`{named}; its {} kernels are [{}]",
                    match kind {
                        KernelKind::Thread => "a thread",
                        KernelKind::Rpc => "an RPC",
                    },
                    self.name,
                    self.kernels.len(),
                    self.kernels
                        .iter()
                        .map(|k| k.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn nothing() {}

    /// A descriptor holding `kernels`, read back.
    fn read(kernels: &'static [SoftKernel]) -> Result<App> {
        let app: &'static SoftApp = Box::leak(Box::new(SoftApp::new(c"app", kernels)));
        App::from_symbol((app as *const SoftApp).cast())
    }

    fn kernel(kind: u32, num_args: u16, narrow_args: u16) -> &'static [SoftKernel] {
        Box::leak(Box::new([SoftKernel {
            name: c"k".as_ptr(),
            entry: nothing as *const std::ffi::c_void,
            kind,
            num_args,
            narrow_args,
        }]))
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the descriptor's checked reads hand write(2) memory past a name's end: UB by miri's rules"
    )]
    fn the_argument_counts_and_narrow_masks_of_each_kind() {
        let k = read(kernel(SoftKernel::THREAD, 16, 0x8001)).unwrap();
        assert_eq!(
            (k.kernels()[0].num_args, k.kernels()[0].narrow_args),
            (16, 0x8001)
        );
        read(kernel(SoftKernel::THREAD, 0, 0)).unwrap();
        read(kernel(SoftKernel::RPC, 4, 0)).unwrap();
        for (kind, n, narrow) in [
            (SoftKernel::THREAD, 17, 0),
            (SoftKernel::RPC, 5, 0),
            // A narrow bit past the arguments.
            (SoftKernel::THREAD, 2, 0b100),
            (SoftKernel::THREAD, 0, 1),
            (7, 1, 0),
        ] {
            let e = read(kernel(kind, n, narrow)).unwrap_err();
            assert_eq!(e.code(), crate::error::ErrorCode::InvalidValue, "{e}");
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the descriptor's checked reads hand write(2) memory past a name's end: UB by miri's rules"
    )]
    fn an_embedded_image_is_copied_and_bounded() {
        let kernels = kernel(SoftKernel::THREAD, 1, 0);
        let at = |desc: SoftApp| {
            let desc: &'static SoftApp = Box::leak(Box::new(desc));
            App::from_symbol((desc as *const SoftApp).cast())
        };
        let bytes: &'static [u8] = b"\x7fELF, or so it says";
        let app = at(SoftApp::new(c"app", kernels).with_image_data(bytes)).unwrap();
        assert_eq!(app.embedded_image(), Some(bytes));
        assert_eq!(
            at(SoftApp::new(c"app", kernels)).unwrap().embedded_image(),
            None
        );
        // A size past the cap is refused before anything is copied.
        let mut huge = SoftApp::new(c"app", kernels).with_image_data(bytes);
        huge.image_size = MAX_EMBEDDED_IMAGE + 1;
        let e = at(huge).unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::InvalidValue, "{e}");
        assert!(e.to_string().contains("embeds an image of"), "{e}");
        // Bytes that cannot be read: a checked read, not a crash.
        let mut wild = SoftApp::new(c"app", kernels).with_image_data(bytes);
        wild.image_data = 8 as *const u8;
        assert!(at(wild).is_err());
        // A version-3 descriptor has no such fields, whatever follows it.
        let mut old = SoftApp::new(c"app", kernels).with_image_data(bytes);
        old.version = SoftApp::VERSION_3;
        assert_eq!(at(old).unwrap().embedded_image(), None);
    }
}
