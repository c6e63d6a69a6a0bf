//! `dpa-app-attributes2blob` as DOCA's scripts run it: YAML to blob, blob back to YAML, and each
//! rule's refusal with its reason and a failing exit status.

use std::path::PathBuf;
use std::process::Command;

fn tool() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dpa-app-attributes2blob"))
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dpakit-a2b-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn yaml_becomes_a_blob_and_back() {
    let d = dir("round-trip");
    let yaml = d.join("app_attributes.yaml");
    std::fs::write(&yaml, " Feature_list:\n   Generating_Empty_CQE: true\n").unwrap();
    let blob = d.join("app_attributes.blob");
    let st = tool().arg(&yaml).arg(&blob).status().unwrap();
    assert!(st.success());
    assert_eq!(std::fs::read(&blob).unwrap(), [1, 0, 0, 0, 0, 0, 0, 0]);
    let st = tool()
        .args(["--blob-size", "16"])
        .arg(&yaml)
        .arg(&blob)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(std::fs::read(&blob).unwrap().len(), 16);
    let back = d.join("back.yaml");
    let st = tool()
        .arg("--bin2yaml")
        .arg(&blob)
        .arg(&back)
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(&back).unwrap();
    assert!(text.contains("Generating_Empty_CQE: true"), "{text}");
    assert!(text.contains("Device_Emulation: false"), "{text}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn each_rule_is_refused_with_its_reason() {
    let d = dir("rules");
    let yaml = d.join("a.yaml");
    std::fs::write(&yaml, "Feature_list:\n  Warp_Drive: true\n").unwrap();
    let blob = d.join("a.blob");
    let refused = |cmd: &mut Command, reason: &str| {
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(reason), "{err}");
    };
    refused(
        tool().arg(&yaml).arg(&blob),
        "`Warp_Drive` is not a DPA feature",
    );
    refused(
        tool().args(["--blob-size", "6"]).arg(&yaml).arg(&blob),
        "a multiple of 4",
    );
    refused(tool().arg(&yaml), "an input and an output file");
    refused(tool().arg("--frobnicate"), "unknown option `--frobnicate`");
    // --notification: the unknown feature is reported, the blob written.
    let out = tool()
        .arg("--notification")
        .arg(&yaml)
        .arg(&blob)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown feature `Warp_Drive` ignored"),
        "{err}"
    );
    assert_eq!(std::fs::read(&blob).unwrap(), [0; 8]);
    // A blob with a bit no feature has.
    std::fs::write(&blob, [0, 0, 0, 0, 0, 0, 0, 0x80]).unwrap();
    refused(
        tool().arg("--bin2yaml").arg(&blob).arg(d.join("x.yaml")),
        "bit 63 is set",
    );
    std::fs::remove_dir_all(&d).unwrap();
}
