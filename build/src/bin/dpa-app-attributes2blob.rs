//! `dpa-app-attributes2blob` for the soft SDK (`cargo xtask soft-sdk` installs it in `tools/`):
//! turns a DPA program's attributes YAML into the blob dpacc's `--dpa-proc-attr` takes, and back.
//! See `dpakit_build::attributes`.

use dpakit_build::attributes;
use std::process::ExitCode;

const USAGE: &str = "\
usage: dpa-app-attributes2blob [--help] [--version] [--yaml2bin|--bin2yaml]
                               [--restrictive|--notification] [--blob-size N] <in> <out>

converts a DPA application's attributes (a YAML `Feature_list` of features and booleans) to the
blob dpacc's --dpa-proc-attr takes (--yaml2bin, the default), or a blob back to YAML (--bin2yaml)

  --restrictive      unknown features and bits are errors (the default)
  --notification     unknown features and bits are reported and ignored
  --blob-size N      bytes of blob to write: a multiple of 4 below 1024 (default 8)
";

struct Options {
    to_blob: bool,
    strict: bool,
    size: usize,
    input: String,
    output: String,
}

fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let (mut to_blob, mut strict, mut size) = (true, true, attributes::DEFAULT_BLOB_SIZE);
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--help" | "-h" => {
                print!("{USAGE}");
                return Ok(None);
            }
            "--version" => {
                println!(
                    "dpa-app-attributes2blob (dpakit soft SDK) {}",
                    env!("CARGO_PKG_VERSION")
                );
                return Ok(None);
            }
            "--yaml2bin" => to_blob = true,
            "--bin2yaml" => to_blob = false,
            "--restrictive" => strict = true,
            "--notification" => strict = false,
            "--blob-size" => {
                let n = it.next().ok_or("--blob-size needs a number")?;
                size = n
                    .parse()
                    .map_err(|_| format!("--blob-size {n}: not a number"))?;
            }
            s if s.starts_with("--blob-size=") => {
                let n = &s["--blob-size=".len()..];
                size = n
                    .parse()
                    .map_err(|_| format!("--blob-size {n}: not a number"))?;
            }
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option `{s}`")),
            file => files.push(file.to_string()),
        }
    }
    attributes::check_blob_size(size).map_err(|e| format!("--blob-size: {e}"))?;
    let [input, output] = <[String; 2]>::try_from(files)
        .map_err(|f| format!("takes an input and an output file, not {}", f.len()))?;
    Ok(Some(Options {
        to_blob,
        strict,
        size,
        input,
        output,
    }))
}

fn run(args: &[String]) -> Result<(), String> {
    let Some(o) = parse(args)? else {
        return Ok(());
    };
    let mut notes = Vec::new();
    let out = if o.to_blob {
        let yaml = std::fs::read_to_string(&o.input)
            .map_err(|e| format!("cannot read {}: {e}", o.input))?;
        let features = attributes::parse_yaml(&yaml, o.strict, &mut notes)
            .map_err(|e| format!("{}: {e}", o.input))?;
        attributes::to_blob(&features, o.size)?
    } else {
        let blob = std::fs::read(&o.input).map_err(|e| format!("cannot read {}: {e}", o.input))?;
        let features = attributes::from_blob(&blob, o.strict, &mut notes)
            .map_err(|e| format!("{}: {e}", o.input))?;
        attributes::to_yaml(&features).into_bytes()
    };
    for note in notes {
        eprintln!("dpa-app-attributes2blob: {}: {note}", o.input);
    }
    std::fs::write(&o.output, out).map_err(|e| format!("cannot write {}: {e}", o.output))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dpa-app-attributes2blob: {e}");
            ExitCode::FAILURE
        }
    }
}
