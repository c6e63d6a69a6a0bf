//! DPA application attributes: the `*_attributes.yaml` a DOCA 3.x DPA program declares the
//! device features it needs in, and the blob `dpa-app-attributes2blob` makes of it for dpacc's
//! `--dpa-proc-attr`.
//!
//! The YAML is a mapping with one key, `Feature_list`, mapping feature names to booleans
//! (`true`/`false`, `yes`/`no`, `on`/`off`); a feature left out is off, and an empty list is
//! legal. The blob is the soft SDK's own layout (documented in docs/soft-device.md): a bit set,
//! bit `i` for feature `i` of [`FEATURES`], in little-endian 32-bit words, `--blob-size` bytes
//! long (a multiple of 4 below 1024; 8 by default).

use std::collections::BTreeMap;

/// The features an attributes file may name, in blob bit order.
pub const FEATURES: &[&str] = &[
    "Generating_Empty_CQE",
    "Device_Emulation",
    "Congestion_Control_Flow_Context_Access",
    "Programmable_Congestion_Control",
];

/// The blob size `dpa-app-attributes2blob` writes unless told otherwise.
pub const DEFAULT_BLOB_SIZE: usize = 8;

/// Largest blob, in bytes (sizes are below 1024 and whole 32-bit words).
pub const MAX_BLOB_SIZE: usize = 1020;

/// The key holding the features.
const ROOT: &str = "Feature_list";

/// Checks a `--blob-size`: a multiple of 4, from 4 to [`MAX_BLOB_SIZE`].
pub fn check_blob_size(size: usize) -> Result<(), String> {
    if size == 0 || size % 4 != 0 || size > MAX_BLOB_SIZE {
        return Err(format!(
            "a blob size of {size} bytes: it is a multiple of 4 from 4 to {MAX_BLOB_SIZE}"
        ));
    }
    Ok(())
}

/// The features `yaml` switches on, by name (each known feature present, on or off). An
/// unknown feature is an error when `strict`, else a warning pushed to `notes`.
pub fn parse_yaml(
    yaml: &str,
    strict: bool,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, bool>, String> {
    let mut features = BTreeMap::new();
    let mut in_list = false;
    let mut root_indent = 0;
    let mut list_indent = None;
    let mut seen_root = false;
    for (n, raw) in yaml.lines().enumerate() {
        let line_no = n + 1;
        let line = strip_comment(raw);
        if line.trim().is_empty() || line.trim() == "---" || line.trim() == "..." {
            continue;
        }
        if line.contains('\t') {
            return Err(format!("line {line_no}: a tab (YAML indents with spaces)"));
        }
        let indent = line.len() - line.trim_start().len();
        let (key, value) = split_entry(line.trim())
            .ok_or_else(|| format!("line {line_no}: `{}` is not `key: value`", line.trim()))?;
        if !in_list || indent <= root_indent {
            // A top-level key (the samples indent it by one space).
            if key != ROOT {
                return Err(format!(
                    "line {line_no}: `{key}`: the attributes file has one key, `{ROOT}`"
                ));
            }
            if seen_root {
                return Err(format!("line {line_no}: `{ROOT}` appears twice"));
            }
            seen_root = true;
            root_indent = indent;
            match value {
                "" => {
                    in_list = true;
                    list_indent = None;
                }
                "{}" | "~" | "null" => in_list = false,
                other => {
                    return Err(format!(
                        "line {line_no}: `{ROOT}: {other}`: the list maps features to booleans, \
                         one per line below it"
                    ));
                }
            }
            continue;
        }
        let base = *list_indent.get_or_insert(indent);
        if indent != base {
            return Err(format!(
                "line {line_no}: `{key}` is indented {indent} spaces, the list's entries {base}"
            ));
        }
        let on = boolean(value).ok_or_else(|| {
            format!("line {line_no}: `{key}: {value}`: a feature is true or false (yes/no, on/off)")
        })?;
        match FEATURES.iter().find(|f| **f == key) {
            Some(f) => {
                if features.insert(*f, on).is_some() {
                    return Err(format!("line {line_no}: feature `{key}` appears twice"));
                }
            }
            None if strict => {
                return Err(format!(
                    "line {line_no}: `{key}` is not a DPA feature the soft SDK knows ({})",
                    FEATURES.join(", ")
                ));
            }
            None => notes.push(format!("line {line_no}: unknown feature `{key}` ignored")),
        }
    }
    if !seen_root {
        return Err(format!(
            "no `{ROOT}` key: the attributes file maps `{ROOT}` to the features"
        ));
    }
    Ok(features)
}

/// The blob of `features`: `size` bytes (checked with [`check_blob_size`]).
pub fn to_blob(features: &BTreeMap<&'static str, bool>, size: usize) -> Result<Vec<u8>, String> {
    check_blob_size(size)?;
    let mut blob = vec![0u8; size];
    for (bit, name) in FEATURES.iter().enumerate() {
        if features.get(name).copied().unwrap_or(false) {
            if bit / 8 >= size {
                return Err(format!(
                    "feature `{name}` (bit {bit}) does not fit {size} bytes"
                ));
            }
            blob[bit / 8] |= 1 << (bit % 8);
        }
    }
    Ok(blob)
}

/// The features a blob switches on. Bits past [`FEATURES`] are an error when `strict`, else a
/// warning pushed to `notes`.
pub fn from_blob(
    blob: &[u8],
    strict: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<(&'static str, bool)>, String> {
    check_blob_size(blob.len()).map_err(|e| format!("not an attributes blob: {e}"))?;
    for bit in FEATURES.len()..blob.len() * 8 {
        if blob[bit / 8] >> (bit % 8) & 1 == 1 {
            let what = format!("bit {bit} is set, and names no DPA feature the soft SDK knows");
            if strict {
                return Err(what);
            }
            notes.push(format!("{what}: ignored"));
        }
    }
    Ok(FEATURES
        .iter()
        .enumerate()
        .map(|(bit, name)| (*name, blob[bit / 8] >> (bit % 8) & 1 == 1))
        .collect())
}

/// The YAML for `features`, as DOCA's samples lay it out.
pub fn to_yaml(features: &[(&str, bool)]) -> String {
    let mut out = format!(" {ROOT}:\n");
    for (name, on) in features {
        out += &format!("   {name}: {on}\n");
    }
    out
}

fn strip_comment(line: &str) -> &str {
    // No quoted strings hold a `#` in an attributes file: a `#` starts a comment.
    line.split_once('#')
        .map_or(line, |(before, _)| before)
        .trim_end()
}

fn split_entry(s: &str) -> Option<(&str, &str)> {
    let (key, value) = s.split_once(':')?;
    let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
    (!key.is_empty()).then_some((key, value.trim()))
}

fn boolean(value: &str) -> Option<bool> {
    match value
        .trim_matches(|c| c == '"' || c == '\'')
        .to_ascii_lowercase()
        .as_str()
    {
        "true" | "yes" | "on" | "y" => Some(true),
        "false" | "no" | "off" | "n" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<BTreeMap<&'static str, bool>, String> {
        parse_yaml(yaml, true, &mut Vec::new())
    }

    #[test]
    fn the_samples_layouts_parse() {
        assert!(parse(" Feature_list:\n").unwrap().is_empty());
        assert!(parse("Feature_list: {}\n").unwrap().is_empty());
        let f = parse(
            "# DPA features\n---\n Feature_list:\n   Generating_Empty_CQE: true  # needed\n   \
             Device_Emulation: no\n",
        )
        .unwrap();
        assert!(f["Generating_Empty_CQE"]);
        assert!(!f["Device_Emulation"]);
    }

    #[test]
    fn yaml_and_blob_round_trip() {
        let f = parse(
            "Feature_list:\n  Programmable_Congestion_Control: on\n  Device_Emulation: yes\n",
        )
        .unwrap();
        let blob = to_blob(&f, DEFAULT_BLOB_SIZE).unwrap();
        assert_eq!(blob, [0b1010, 0, 0, 0, 0, 0, 0, 0]);
        let back = from_blob(&blob, true, &mut Vec::new()).unwrap();
        let yaml = to_yaml(&back);
        assert_eq!(
            parse(&yaml)
                .unwrap()
                .into_iter()
                .filter(|(_, on)| *on)
                .count(),
            2
        );
        assert_eq!(to_blob(&parse(&yaml).unwrap(), 8).unwrap(), blob);
    }

    #[test]
    fn what_is_not_an_attributes_file_is_refused_by_rule() {
        let refused = |yaml: &str, text: &str| {
            let e = parse(yaml).unwrap_err();
            assert!(e.contains(text), "{yaml:?}: {e}");
        };
        refused("", "no `Feature_list` key");
        refused("Features:\n", "one key, `Feature_list`");
        refused(
            "Feature_list:\n  Device_Emulation: maybe\n",
            "true or false",
        );
        refused(
            "Feature_list:\n  Warp_Drive: true\n",
            "`Warp_Drive` is not a DPA feature",
        );
        refused(
            "Feature_list:\n  Device_Emulation: true\n  Device_Emulation: false\n",
            "appears twice",
        );
        refused(
            "Feature_list:\n    Device_Emulation: true\n  Generating_Empty_CQE: true\n",
            "indented",
        );
        refused("Feature_list: [a]\n", "one per line");
        // Not strict: an unknown feature is a note.
        let mut notes = Vec::new();
        parse_yaml("Feature_list:\n  Warp_Drive: true\n", false, &mut notes).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn blob_sizes_and_unknown_bits_follow_the_rules() {
        for bad in [0, 3, 6, 1024, 4096] {
            assert!(check_blob_size(bad).is_err(), "{bad}");
        }
        for good in [4, 8, 1020] {
            check_blob_size(good).unwrap();
        }
        let mut blob = vec![0u8; 8];
        blob[7] = 0x80;
        assert!(
            from_blob(&blob, true, &mut Vec::new())
                .unwrap_err()
                .contains("bit 63")
        );
        let mut notes = Vec::new();
        from_blob(&blob, false, &mut notes).unwrap();
        assert_eq!(notes.len(), 1);
        assert!(from_blob(&[0; 6], true, &mut Vec::new()).is_err());
    }
}
