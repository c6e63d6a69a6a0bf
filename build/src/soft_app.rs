//! Exporting C kernels from the soft device's app library.
//!
//! rustc links a cdylib with a version script that exports only Rust's own `#[no_mangle]`
//! symbols: a C function bundled into the crate (the C kernels `dpa-kernels/build.rs` compiles)
//! is linked in but stays local, so a program built with feature `doca` could not find it by
//! name. The soft app build therefore links through a small wrapper that adds the C kernels to
//! the `global:` list of rustc's version script, then runs the usual linker. A check afterwards
//! makes sure the library exports every kernel the device archive records, whatever the
//! language.

use object::{Object, ObjectSymbol};
use std::ffi::OsString;
use std::path::Path;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// The linker rustc uses for the host target by default.
const HOST_LINKER: &str = "cc";

/// The rustc arguments that make the soft app build export `c_kernels`: a linker wrapper written
/// into `dir` (none when there are no C kernels).
pub fn rustc_args(dir: &Path, c_kernels: &[&str]) -> Result<Vec<OsString>> {
    if c_kernels.is_empty() {
        return Ok(Vec::new());
    }
    let script = wrapper_script(c_kernels, HOST_LINKER)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("export-c-kernels.sh");
    // Rewritten only when it changes, so an unchanged build stays fresh.
    if std::fs::read_to_string(&path).ok().as_deref() != Some(script.as_str()) {
        std::fs::write(&path, &script)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    set_executable(&path)?;
    let mut linker = OsString::from("linker=");
    linker.push(&path);
    Ok(vec!["-C".into(), linker])
}

/// A POSIX shell linker wrapper: adds `symbols` to the `global:` list of the version script
/// rustc passes (`-Wl,--version-script=FILE`), then runs `linker` with the same arguments. It
/// fails, saying why, when there is no version script or no `global:` list in it.
pub fn wrapper_script(symbols: &[&str], linker: &str) -> Result<String> {
    if let Some(bad) = symbols
        .iter()
        .find(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    {
        return Err(format!("`{bad}` is not a C identifier: cannot export it"));
    }
    let symbols = symbols.join(" ");
    Ok(format!(
        r#"#!/bin/sh
# Written by dpakit-build: rustc's linker for the soft device's app library. rustc
# exports only Rust's own symbols from a cdylib; this adds the C kernels to its version script.
found=
for arg in "$@"; do
	case "$arg" in
	-Wl,--version-script=*)
		list=${{arg#-Wl,--version-script=}}
		awk -v symbols='{symbols}' '
			{{ print }}
			/^[ \t]*global:[ \t]*$/ && !done {{
				n = split(symbols, s, " ")
				for (i = 1; i <= n; i++) print "    " s[i] ";"
				done = 1
			}}
			END {{ exit !done }}' "$list" >"$list.c-kernels" || {{
			echo "dpakit soft app link: no global: list in $list; cannot export the C kernels" >&2
			exit 1
		}}
		mv "$list.c-kernels" "$list" || exit 1
		found=1
		;;
	esac
done
if [ -z "$found" ]; then
	echo "dpakit soft app link: rustc passed no version script; cannot export the C kernels" >&2
	exit 1
fi
exec {linker} "$@"
"#
    ))
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", path.display()))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) -> Result {
    Ok(())
}

/// Fails, naming the missing ones, unless shared library `lib` exports every one of `symbols`.
pub fn check_exported(lib: &Path, symbols: &[&str]) -> Result {
    let data = std::fs::read(lib).map_err(|e| format!("cannot read {}: {e}", lib.display()))?;
    let file = object::File::parse(&*data)
        .map_err(|e| format!("{} is not a shared library: {e}", lib.display()))?;
    let exported: Vec<&str> = file
        .dynamic_symbols()
        .filter(|s| !s.is_undefined() && s.is_global())
        .filter_map(|s| s.name().ok())
        .collect();
    let missing: Vec<&str> = symbols
        .iter()
        .copied()
        .filter(|s| !exported.contains(s))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} does not export the kernels {}: programs built with feature `doca` could not \
             find them",
            lib.display(),
            missing.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = crate::tests::scratch_dir(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Runs the wrapper (with `true` as the linker) on `args`; returns its status and stderr.
    fn run_wrapper(dir: &Path, args: &[String]) -> (bool, String) {
        let script = dir.join("wrapper.sh");
        std::fs::write(
            &script,
            wrapper_script(&["echo_c", "add_c"], "true").unwrap(),
        )
        .unwrap();
        let out = Command::new("sh").arg(&script).args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn the_wrapper_adds_the_c_kernels_to_rustcs_version_script() {
        let dir = scratch("soft-exports-wrapper");
        let list = dir.join("list");
        std::fs::write(
            &list,
            "{\n  global:\n    dpakit_kernels;\n\n  local:\n    *;\n};\n",
        )
        .unwrap();
        let arg = format!("-Wl,--version-script={}", list.display());
        let (ok, err) = run_wrapper(&dir, &["-o".into(), "x.so".into(), arg]);
        assert!(ok, "{err}");
        let edited = std::fs::read_to_string(&list).unwrap();
        assert_eq!(
            edited,
            "{\n  global:\n    echo_c;\n    add_c;\n    dpakit_kernels;\n\n  local:\n    *;\n};\n"
        );
    }

    #[test]
    fn the_wrapper_fails_without_a_version_script_to_edit() {
        let dir = scratch("soft-exports-missing");
        let (ok, err) = run_wrapper(&dir, &["-o".into(), "x.so".into()]);
        assert!(!ok);
        assert!(err.contains("rustc passed no version script"), "{err}");

        let list = dir.join("list");
        std::fs::write(&list, "{ local: *; };\n").unwrap();
        let arg = format!("-Wl,--version-script={}", list.display());
        let (ok, err) = run_wrapper(&dir, &[arg]);
        assert!(!ok);
        assert!(err.contains("no global: list"), "{err}");
    }

    #[test]
    fn only_identifiers_are_exported_and_no_c_kernels_need_no_wrapper() {
        let e = wrapper_script(&["echo_c", "x; rm -rf /"], "cc").unwrap_err();
        assert!(e.contains("not a C identifier"), "{e}");
        assert_eq!(rustc_args(Path::new("/nonexistent"), &[]), Ok(vec![]));
    }
}
