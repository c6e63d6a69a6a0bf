//! `cargo xtask new DIR [--name NAME]`: a workspace of the user's own with a DPA kernel crate,
//! the types it shares with the host, a host program and an xtask calling dpakit-build — the
//! files of `xtask/template/` with the project's name and where dpakit comes from filled in.

use crate::{Result, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the generated project takes dpakit from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// This checkout of the kit (the default).
    Path(PathBuf),
    /// A version from the registry.
    Version(String),
    /// A git repository, at a revision if given.
    Git { url: String, rev: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The directory to create.
    pub dir: PathBuf,
    /// The project's name (default: the directory's name).
    pub name: Option<String>,
    pub source: Source,
}

impl Options {
    /// `new DIR [--name NAME] [--dpakit-path DIR | --dpakit-version VER | --dpakit-git URL
    /// [--dpakit-rev REV]]`.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut dir = None;
        let mut name = None;
        let mut source = None;
        let mut rev = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("new: {flag} takes a value"))
            };
            let chosen = match arg.as_str() {
                "--name" => {
                    name = Some(value("--name")?);
                    None
                }
                "--dpakit-path" => Some(Source::Path(PathBuf::from(value("--dpakit-path")?))),
                "--dpakit-version" => Some(Source::Version(value("--dpakit-version")?)),
                "--dpakit-git" => Some(Source::Git {
                    url: value("--dpakit-git")?,
                    rev: None,
                }),
                "--dpakit-rev" => {
                    rev = Some(value("--dpakit-rev")?);
                    None
                }
                other if other.starts_with('-') => {
                    return Err(format!("new: unknown option `{other}`"));
                }
                other if dir.is_none() => {
                    dir = Some(PathBuf::from(other));
                    None
                }
                other => return Err(format!("new: one directory only (`{other}`)")),
            };
            if let Some(chosen) = chosen
                && source.replace(chosen).is_some()
            {
                return Err("new: one of --dpakit-path, --dpakit-version, --dpakit-git".to_string());
            }
        }
        let source = match (source, rev) {
            (Some(Source::Git { url, .. }), rev) => Source::Git { url, rev },
            (_, Some(_)) => return Err("new: --dpakit-rev goes with --dpakit-git".to_string()),
            (Some(source), None) => source,
            (None, None) => Source::Path(workspace_root()),
        };
        let dir = dir.ok_or("new: which directory? (cargo xtask new DIR [--name NAME])")?;
        Ok(Options { dir, name, source })
    }
}

/// Each file of the template: where it goes (with `{{name}}` filled in) and its contents.
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../template/Cargo.toml.tmpl")),
    (
        ".cargo/config.toml",
        include_str!("../template/dot-cargo/config.toml.tmpl"),
    ),
    (".gitignore", include_str!("../template/gitignore.tmpl")),
    ("README.md", include_str!("../template/README.md.tmpl")),
    (
        "{{name}}-common/Cargo.toml",
        include_str!("../template/common/Cargo.toml.tmpl"),
    ),
    (
        "{{name}}-common/src/lib.rs",
        include_str!("../template/common/lib.rs.tmpl"),
    ),
    (
        "{{name}}-kernels/Cargo.toml",
        include_str!("../template/kernels/Cargo.toml.tmpl"),
    ),
    (
        "{{name}}-kernels/src/lib.rs",
        include_str!("../template/kernels/lib.rs.tmpl"),
    ),
    (
        "{{name}}-kernels/build.rs",
        include_str!("../template/kernels/build.rs.tmpl"),
    ),
    (
        "{{name}}/Cargo.toml",
        include_str!("../template/host/Cargo.toml.tmpl"),
    ),
    (
        "{{name}}/src/lib.rs",
        include_str!("../template/host/lib.rs.tmpl"),
    ),
    (
        "{{name}}/src/main.rs",
        include_str!("../template/host/main.rs.tmpl"),
    ),
    (
        "{{name}}/tests/scale.rs",
        include_str!("../template/host/tests.rs.tmpl"),
    ),
    (
        "xtask/Cargo.toml",
        include_str!("../template/xtask/Cargo.toml.tmpl"),
    ),
    (
        "xtask/src/main.rs",
        include_str!("../template/xtask/main.rs.tmpl"),
    ),
];

/// Names the generated packages would clash with.
const RESERVED: &[&str] = &["xtask", "test", "core", "std", "alloc"];

/// Writes the project; returns its name.
pub fn run(opts: &Options) -> Result<String> {
    let name = match &opts.name {
        Some(name) => name.clone(),
        None => opts
            .dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("new: {} has no name; give --name", opts.dir.display()))?
            .to_string(),
    };
    check_name(&name)?;
    if opts
        .dir
        .read_dir()
        .is_ok_and(|mut entries| entries.next().is_some())
    {
        return Err(format!(
            "new: {} exists and is not empty",
            opts.dir.display()
        ));
    }
    let values = values(&name, &opts.source)?;
    for (path, contents) in FILES {
        let path = opts.dir.join(fill(path, &values));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, fill(contents, &values))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    // Formatted as rustfmt would (import order depends on the project's name).
    let sources: Vec<PathBuf> = FILES
        .iter()
        .map(|(path, _)| opts.dir.join(fill(path, &values)))
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    match Command::new("rustfmt")
        .args(["--edition", "2024"])
        .args(&sources)
        .status()
    {
        Ok(status) if status.success() => {}
        _ => eprintln!("note: rustfmt did not run; the project's sources are not formatted"),
    }
    // From a checkout, the registry crates the kit is tested with: its lock file (cargo drops
    // what the project does not use and adds its own packages).
    if let Source::Path(root) = &opts.source {
        let lock = root.join("Cargo.lock");
        if lock.is_file() {
            std::fs::copy(&lock, opts.dir.join("Cargo.lock"))
                .map_err(|e| format!("cannot copy {}: {e}", lock.display()))?;
        }
    }
    Ok(name)
}

/// A package name cargo and the generated code accept: lowercase ASCII letters, digits and
/// `-`, starting with a letter; neither reserved nor one of the kit's.
fn check_name(name: &str) -> Result {
    let ok = name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !ok {
        return Err(format!(
            "new: `{name}` is not a project name: lowercase letters, digits and single `-`, \
             starting with a letter (give one with --name)"
        ));
    }
    if RESERVED.contains(&name) || name.starts_with("dpakit") {
        return Err(format!(
            "new: `{name}` would clash with a package of the template or the kit"
        ));
    }
    Ok(())
}

/// The placeholders and what they become.
fn values(name: &str, source: &Source) -> Result<Vec<(&'static str, String)>> {
    let crates = [
        ("{{dpakit}}", "dpakit", ""),
        ("{{dpakit-abi}}", "dpakit-abi", "shared-abi"),
        ("{{dpakit-dev}}", "dpakit-dev", "dpa-dev"),
        ("{{dpakit-build}}", "dpakit-build", "build"),
    ];
    let mut values = vec![
        ("{{name}}", name.to_string()),
        ("{{crate}}", name.replace('-', "_")),
    ];
    let described = match source {
        Source::Path(root) => {
            let root =
                std::path::absolute(root).map_err(|e| format!("new: {}: {e}", root.display()))?;
            if !root.join("build").join("Cargo.toml").is_file() {
                return Err(format!(
                    "new: {} is not a dpakit checkout (no build/Cargo.toml)",
                    root.display()
                ));
            }
            for (key, _, folder) in crates {
                values.push((key, format!("path = {}", toml_string(&root.join(folder)))));
            }
            format!("from the checkout at {}", root.display())
        }
        Source::Version(version) => {
            for (key, ..) in crates {
                values.push((key, format!("version = {}", toml_str(version))));
            }
            format!("version {version} from the registry")
        }
        Source::Git { url, rev } => {
            let rev = rev
                .as_ref()
                .map_or(String::new(), |r| format!(", rev = {}", toml_str(r)));
            for (key, ..) in crates {
                values.push((key, format!("git = {}{rev}", toml_str(url))));
            }
            format!("from {url}")
        }
    };
    values.push(("{{source}}", described));
    Ok(values)
}

fn fill(template: &str, values: &[(&str, String)]) -> String {
    values
        .iter()
        .fold(template.to_string(), |out, (key, value)| {
            out.replace(key, value)
        })
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_string(path: &Path) -> String {
    toml_str(&path.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn options_choose_one_source() {
        let o = Options::parse(&args("/tmp/x --name my-app")).unwrap();
        assert_eq!(o.dir, PathBuf::from("/tmp/x"));
        assert_eq!(o.name.as_deref(), Some("my-app"));
        assert_eq!(o.source, Source::Path(workspace_root()));
        let o = Options::parse(&args("x --dpakit-git https://h/r --dpakit-rev abc")).unwrap();
        assert_eq!(
            o.source,
            Source::Git {
                url: "https://h/r".into(),
                rev: Some("abc".into())
            }
        );
        for bad in [
            "x --dpakit-version 0.1 --dpakit-git u",
            "x --dpakit-rev abc",
            "x y",
            "--name n",
            "x --frob",
        ] {
            assert!(Options::parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_must_be_package_names_of_their_own() {
        for good in ["scaler", "my-offload2"] {
            check_name(good).unwrap();
        }
        for bad in [
            "Scaler", "1x", "a--b", "x-", "my_app", "xtask", "dpakit-x", "",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        let values = values("my-app", &Source::Version("0.1".into())).unwrap();
        // A placeholder is `{{` a lowercase name `}}` (Rust's `{{` escapes are not).
        let unfilled = |text: &str| {
            text.match_indices("{{").any(|(at, _)| {
                let rest = &text[at + 2..];
                rest.find("}}").is_some_and(|end| {
                    end > 0
                        && rest[..end]
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b == b'-')
                })
            })
        };
        for (path, contents) in FILES {
            let (path, contents) = (fill(path, &values), fill(contents, &values));
            assert!(!unfilled(&path), "{path}");
            assert!(!unfilled(&contents), "{path}: {contents}");
        }
        assert!(unfilled("x {{name}} y") && !unfilled("format!(\"{{}}\")"));
        let root = fill(FILES[0].1, &values);
        assert!(
            root.contains("dpakit-build = { version = \"0.1\" }"),
            "{root}"
        );
        let kernels = fill(FILES[7].1, &values);
        assert!(kernels.contains("pub APP = my_app_kernels"), "{kernels}");
    }

    #[test]
    fn a_project_is_written_once_into_an_empty_directory() {
        let dir = workspace_root().join("target/xtask-tests/new-project");
        let _ = std::fs::remove_dir_all(&dir);
        let opts = Options::parse(&[dir.display().to_string()]).unwrap();
        assert_eq!(run(&opts).unwrap(), "new-project");
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains(&format!(
                "dpakit-build = {{ path = {} }}",
                toml_string(&workspace_root().join("build"))
            )),
            "{manifest}"
        );
        assert!(dir.join("new-project-kernels/src/lib.rs").is_file());
        assert!(dir.join("new-project-kernels/build.rs").is_file());
        let e = run(&opts).unwrap_err();
        assert!(e.contains("not empty"), "{e}");
    }
}
