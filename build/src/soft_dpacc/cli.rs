//! dpacc's command line, as DOCA documents it, read into an [`Invocation`]. Options take their
//! value after `=` or as the next argument; an option the soft dpacc does not know is an error
//! naming it, never silently dropped.

use std::path::PathBuf;

/// What one dpacc run is asked to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// Device C sources.
    pub sources: Vec<PathBuf>,
    /// Device objects and archives given as inputs (anything that is not a C source).
    pub objects: Vec<PathBuf>,
    /// The DPA program to write (`-o`): a host-linkable static library.
    pub output: Option<PathBuf>,
    /// `-mcpu`: the DPA generations, a comma-separated list (a fatbinary for each on DOCA).
    pub mcpu: Option<String>,
    /// `--keep-dir`: where intermediate files are kept (the work directory).
    pub keep_dir: Option<PathBuf>,
    /// `--dpa-proc-attr`: the attributes blob (from `dpa-app-attributes2blob`).
    pub proc_attr: Option<PathBuf>,
    /// `-hostcc`: the host compiler.
    pub hostcc: Option<String>,
    /// `-hostcc-options`: flags for host-side compiles.
    pub hostcc_options: Vec<String>,
    /// `-devicecc-options`: flags for compiling the device code.
    pub devicecc_options: Vec<String>,
    /// `--app-name`: the app symbol (`struct doca_dpa_app *`) host code names.
    pub app_name: Option<String>,
    /// `-device-libs` and loose `-L`/`-l`: the device link's libraries.
    pub device_libs: Vec<String>,
    /// `-I` and `-D`/`-U` flags, for device compiles.
    pub preprocessor: Vec<String>,
    /// `--dryrun`: print the commands, run none.
    pub dryrun: bool,
    /// `-h`/`--help`.
    pub help: bool,
    /// `--version`.
    pub version: bool,
}

/// Options whose value is one argument (after `=` or as the next one), by every spelling.
const VALUED: &[(&str, &[&str])] = &[
    ("output", &["-o", "--output-file"]),
    ("mcpu", &["-mcpu", "--mcpu"]),
    ("hostcc", &["-hostcc", "--hostcc"]),
    ("hostcc-options", &["-hostcc-options", "--hostcc-options"]),
    (
        "devicecc-options",
        &["-devicecc-options", "--devicecc-options"],
    ),
    ("app-name", &["-app-name", "--app-name"]),
    ("device-libs", &["-device-libs", "--device-libs"]),
    ("keep-dir", &["-keep-dir", "--keep-dir"]),
    ("dpa-proc-attr", &["-dpa-proc-attr", "--dpa-proc-attr"]),
];

/// Options without a value the soft dpacc accepts and ignores, with why.
const IGNORED: &[(&str, &str)] = &[
    (
        "-flto",
        "link-time optimisation changes nothing the soft device models",
    ),
    (
        "--flto",
        "link-time optimisation changes nothing the soft device models",
    ),
    (
        "-keep",
        "there are no intermediate files to keep beyond the work directory",
    ),
    (
        "-disable-asm-checks",
        "the soft device builds no DPA assembly to check",
    ),
    (
        "--disable-asm-checks",
        "the soft device builds no DPA assembly to check",
    ),
];

/// Reads dpacc's arguments.
pub fn parse(args: &[String]) -> Result<Invocation, String> {
    let mut inv = Invocation::default();
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        if let Some((key, value)) = valued(arg) {
            let value = match value {
                Some(v) => v.to_string(),
                None => args
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("dpacc: {arg} takes a value"))?,
            };
            match key {
                "output" => inv.output = Some(PathBuf::from(value)),
                "mcpu" => inv.mcpu = Some(value),
                "hostcc" => inv.hostcc = Some(value),
                "hostcc-options" => inv.hostcc_options.extend(split(&value)),
                "devicecc-options" => inv.devicecc_options.extend(split(&value)),
                "app-name" => inv.app_name = Some(value),
                "device-libs" => inv.device_libs.extend(split(&value)),
                "keep-dir" => inv.keep_dir = Some(PathBuf::from(value)),
                "dpa-proc-attr" => inv.proc_attr = Some(PathBuf::from(value)),
                _ => unreachable!("every valued key is handled"),
            }
            continue;
        }
        match arg.as_str() {
            "--dryrun" | "-dryrun" => inv.dryrun = true,
            "-h" | "--help" | "-help" => inv.help = true,
            "--version" | "-version" => inv.version = true,
            a if IGNORED.iter().any(|(flag, _)| *flag == a) => {}
            a if a.starts_with("-I") || a.starts_with("-D") || a.starts_with("-U") => {
                if a.len() == 2 {
                    let value = args
                        .next()
                        .ok_or_else(|| format!("dpacc: {a} takes a value"))?;
                    inv.preprocessor.push(format!("{a}{value}"));
                } else {
                    inv.preprocessor.push(a.to_string());
                }
            }
            // DOCA's device libraries given loose (`-ldoca_dpa_dev`, `--ldoca_dpa`).
            a if a.starts_with("-l") || a.starts_with("-L") => inv.device_libs.push(a.into()),
            a if a.starts_with("--l") => inv.device_libs.push(a[1..].into()),
            a if a.starts_with('-') => {
                return Err(format!(
                    "dpacc: unknown option `{a}` (the soft dpacc takes -o, -mcpu, -hostcc, \
                     -hostcc-options, -devicecc-options, --app-name, -device-libs, --keep-dir, \
                     --dpa-proc-attr, -I, -D, -U, -l, -L, -flto, -disable-asm-checks, --dryrun; \
                     see docs/soft-device.md)"
                ));
            }
            input => {
                let path = PathBuf::from(input);
                if path.extension().is_some_and(|e| e == "c") {
                    inv.sources.push(path);
                } else {
                    inv.objects.push(path);
                }
            }
        }
    }
    Ok(inv)
}

/// `(key, value if given with =)` when `arg` is a valued option.
fn valued(arg: &str) -> Option<(&'static str, Option<&str>)> {
    for (key, spellings) in VALUED {
        for spelling in *spellings {
            if arg == *spelling {
                return Some((key, None));
            }
            if let Some(value) = arg
                .strip_prefix(spelling)
                .and_then(|rest| rest.strip_prefix('='))
            {
                return Some((key, Some(value)));
            }
        }
    }
    None
}

/// Splits an option string the way a shell would split it without quoting: on whitespace, with
/// `"…"` and `'…'` kept together.
pub fn split(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut any = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                    any = false;
                }
            }
            (None, c) => current.push(c),
        }
    }
    if any || !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_command_line_as_doca_documents_it() {
        let inv = parse(&args(&[
            "kernel.c",
            "extra.a",
            "-o",
            "prog.a",
            "-mcpu=nv-dpa-bf3",
            "-hostcc=gcc",
            "-hostcc-options=-Wall -O2",
            "--devicecc-options=-D__linux__ -Wno-deprecated-declarations",
            "--app-name=hello_app",
            "-device-libs=-L/opt/lib -ldoca_dpa_dev -ldoca_dpa_dev_comm",
            "--ldoca_dpa",
            "-I/opt/include",
            "-D",
            "X=1",
            "-flto",
            "--dryrun",
        ]))
        .unwrap();
        assert_eq!(inv.sources, [PathBuf::from("kernel.c")]);
        assert_eq!(inv.objects, [PathBuf::from("extra.a")]);
        assert_eq!(inv.output, Some(PathBuf::from("prog.a")));
        assert_eq!(inv.mcpu.as_deref(), Some("nv-dpa-bf3"));
        assert_eq!(inv.hostcc.as_deref(), Some("gcc"));
        assert_eq!(inv.hostcc_options, ["-Wall", "-O2"]);
        assert_eq!(
            inv.devicecc_options,
            ["-D__linux__", "-Wno-deprecated-declarations"]
        );
        assert_eq!(inv.app_name.as_deref(), Some("hello_app"));
        assert_eq!(
            inv.device_libs,
            [
                "-L/opt/lib",
                "-ldoca_dpa_dev",
                "-ldoca_dpa_dev_comm",
                "-ldoca_dpa"
            ]
        );
        assert_eq!(inv.preprocessor, ["-I/opt/include", "-DX=1"]);
        assert!(inv.dryrun);
    }

    #[test]
    fn unknown_options_are_named() {
        let e = parse(&args(&["k.c", "--frobnicate"])).unwrap_err();
        assert!(e.contains("`--frobnicate`"), "{e}");
        let e = parse(&args(&["k.c", "-o"])).unwrap_err();
        assert!(e.contains("-o takes a value"), "{e}");
    }

    #[test]
    fn option_strings_split_like_a_shell() {
        assert_eq!(split(" -a  'b c' \"d\" "), ["-a", "b c", "d"]);
        assert_eq!(split(""), Vec::<String>::new());
    }
}
