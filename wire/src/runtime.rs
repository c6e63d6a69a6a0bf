//! Where Comch servers listen.
//!
//! The runtime directory is `$DPAKIT_SOFT_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/dpakit-soft`,
//! else `/tmp/dpakit-soft-<uid>`; it must be a directory of this user, closed to everyone else
//! (0700), or nothing is created in it. A server's socket is named after the PCI function its
//! representor stands for and a hash of its name, so a client finds the servers of its own
//! function only: that is Comch's isolation by representor.

use crate::Result;
use dpakit_abi::bail;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::PathBuf;

/// Longest socket path the kernel takes (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The runtime directory, created (0700) if missing; `NOT_PERMITTED` if it exists and is not
/// this user's private directory.
pub fn runtime_dir() -> Result<PathBuf> {
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    let dir = match std::env::var_os("DPAKIT_SOFT_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d).join("dpakit-soft"),
            _ => PathBuf::from(format!("/tmp/dpakit-soft-{uid}")),
        },
    };
    private_dir(dir, uid)
}

/// `dir`, created (0700) if missing; `NOT_PERMITTED` unless it is a directory of `uid` closed
/// to everyone else.
fn private_dir(dir: PathBuf, uid: u32) -> Result<PathBuf> {
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => bail!(
            OperatingSystem,
            "cannot create the Comch runtime directory {}: {e}",
            dir.display()
        ),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| {
        dpakit_abi::Error::from_args(
            dpakit_abi::ErrorCode::OperatingSystem,
            format_args!("cannot inspect {}: {e}", dir.display()),
        )
    })?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        bail!(
            NotPermitted,
            "the Comch runtime directory {} must be a directory owned by uid {uid} with mode \
             0700 (it is {} owned by uid {} with mode {:o}): remove it or point \
             DPAKIT_SOFT_RUNTIME_DIR elsewhere",
            dir.display(),
            if meta.is_dir() {
                "a directory"
            } else {
                "not a directory"
            },
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    Ok(dir)
}

/// Where the server `name` of the host function `function` (a PCI address as DOCA prints it)
/// listens.
pub fn server_path(function: &str, name: &str) -> Result<PathBuf> {
    socket_path("comch", function, name)
}

/// Where the legacy Comm Channel service `name` of the host function `function` listens: a
/// namespace of its own, so a Comch server and a Comm Channel service may share a name.
pub fn service_path(function: &str, name: &str) -> Result<PathBuf> {
    socket_path("cc", function, name)
}

fn socket_path(kind: &str, function: &str, name: &str) -> Result<PathBuf> {
    let path = runtime_dir()?.join(format!("{kind}-{function}-{:016x}", fnv1a(name.as_bytes())));
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        bail!(
            InvalidValue,
            "the socket path {} is longer than the {MAX_SOCKET_PATH} bytes a Unix socket takes: \
             use a shorter DPAKIT_SOFT_RUNTIME_DIR",
            path.display()
        );
    }
    Ok(path)
}

/// Whether peers of another user may connect (`DPAKIT_SOFT_COMCH_ANY_UID=1`); by default a
/// server accepts clients of its own user only.
pub fn any_uid() -> bool {
    std::env::var("DPAKIT_SOFT_COMCH_ANY_UID").is_ok_and(|v| v == "1")
}

/// 64-bit FNV-1a: a stable hash for socket names (the handshake compares the exact name).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "the file system: miri isolates the host")]
    fn the_runtime_directory_must_be_private() {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let base = std::env::temp_dir().join(format!("dpakit-wire-{}", std::process::id()));
        let private = base.join("private");
        std::fs::create_dir_all(&base).unwrap();
        assert_eq!(private_dir(private.clone(), uid).unwrap(), private);
        let meta = std::fs::metadata(&private).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700);
        let open = base.join("open");
        std::fs::create_dir_all(&open).unwrap();
        std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let e = private_dir(open, uid).unwrap_err();
        assert_eq!(e.code(), dpakit_abi::ErrorCode::NotPermitted, "{e}");
        let e = private_dir(private, uid.wrapping_add(1)).unwrap_err();
        assert_eq!(e.code(), dpakit_abi::ErrorCode::NotPermitted, "{e}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn names_hash_apart() {
        assert_ne!(fnv1a(b"server-a"), fnv1a(b"server-b"));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    }
}
