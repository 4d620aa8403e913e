//! Each overlay accepts exactly its upstream's feature names, forwards each
//! one, and its patch face declares the same table.
//!
//! Upstream's names are read from the manifest of the package cargo
//! downloaded, at the version the overlay pins, so that moving a pin needs
//! no edit here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

type Features = BTreeMap<String, Vec<String>>;

/// One upstream line: its overlay and its patch face.
struct Line {
    overlay: &'static str,
    face: &'static str,
}

const LINE_3: Line = Line {
    overlay: "crates/rmcp-resume/Cargo.toml",
    face: "crates/rmcp/Cargo.toml",
};

const LINE_1: Line = Line {
    overlay: "crates/rmcp-resume-1/Cargo.toml",
    face: "crates/rmcp-1/Cargo.toml",
};

const LINE_2: Line = Line {
    overlay: "crates/rmcp-resume-2/Cargo.toml",
    face: "crates/rmcp-2/Cargo.toml",
};

const LINE_0_17: Line = Line {
    overlay: "crates/rmcp-resume-0-17/Cargo.toml",
    face: "crates/rmcp-0-17/Cargo.toml",
};

const LINE_0_16: Line = Line {
    overlay: "crates/rmcp-resume-0-16/Cargo.toml",
    face: "crates/rmcp-0-16/Cargo.toml",
};

const LINE_0_15: Line = Line {
    overlay: "crates/rmcp-resume-0-15/Cargo.toml",
    face: "crates/rmcp-0-15/Cargo.toml",
};

fn manifest(path: PathBuf) -> toml::Table {
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.parse().expect("manifest is valid TOML")
}

fn ours(relative: &str) -> toml::Table {
    manifest(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative))
}

fn features(doc: &toml::Table) -> Features {
    let table = doc["features"].as_table().expect("[features] table");
    table
        .iter()
        .map(|(k, v)| {
            let list = v
                .as_array()
                .expect("feature is a list")
                .iter()
                .map(|x| x.as_str().expect("string").to_owned())
                .collect();
            (k.clone(), list)
        })
        .collect()
}

/// The exact upstream version an overlay pins (`=X.Y.Z`).
fn pinned(overlay: &toml::Table) -> String {
    let req = overlay["dependencies"]["upstream"]["version"]
        .as_str()
        .expect("upstream has a version requirement");
    req.strip_prefix('=').expect("the pin is exact").to_owned()
}

fn downloaded_manifest(version: &str) -> toml::Table {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("neither CARGO_HOME nor HOME is set");
    let src = home.join("registry").join("src");
    let found = std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()))
        .filter_map(Result::ok)
        .map(|index| index.path().join(format!("rmcp-{version}/Cargo.toml")))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("rmcp-{version} not unpacked under {}", src.display()));
    manifest(found)
}

/// Every feature name upstream accepts: the declared ones, plus the implicit
/// feature of each optional dependency that no `dep:` entry hides.
fn upstream_names(doc: &toml::Table) -> BTreeSet<String> {
    let declared = features(doc);
    let hidden: BTreeSet<&str> = declared
        .values()
        .flatten()
        .filter_map(|x| x.strip_prefix("dep:"))
        .map(|x| x.split('?').next().unwrap_or(x))
        .collect();
    let implicit = doc["dependencies"]
        .as_table()
        .expect("[dependencies]")
        .iter()
        .filter(|(_, spec)| spec.get("optional").and_then(|o| o.as_bool()) == Some(true))
        .map(|(name, _)| name.as_str())
        .filter(|name| !hidden.contains(name))
        .map(str::to_owned);
    declared.keys().cloned().chain(implicit).collect()
}

fn accepts_every_upstream_feature_and_forwards_it(line: &Line) {
    let overlay = ours(line.overlay);
    let upstream = downloaded_manifest(&pinned(&overlay));
    let ours = features(&overlay);
    let names: BTreeSet<String> = ours.keys().cloned().collect();
    assert_eq!(names, upstream_names(&upstream), "{}", line.overlay);
    let upstream_default = &features(&upstream)["default"];
    for (name, enables) in &ours {
        if name == "default" {
            assert_eq!(enables, upstream_default, "upstream's default set");
        } else {
            assert!(
                enables.contains(&format!("upstream/{name}")),
                "feature {name} does not forward to upstream/{name}: {enables:?}"
            );
        }
    }
}

#[test]
fn overlay_accepts_every_upstream_feature_and_forwards_it() {
    accepts_every_upstream_feature_and_forwards_it(&LINE_3);
}

#[test]
fn overlay_1_accepts_every_upstream_1_feature_and_forwards_it() {
    accepts_every_upstream_feature_and_forwards_it(&LINE_1);
}

#[test]
fn overlay_2_accepts_every_upstream_2_feature_and_forwards_it() {
    accepts_every_upstream_feature_and_forwards_it(&LINE_2);
}

#[test]
fn overlay_0_17_accepts_every_upstream_0_17_feature_and_forwards_it() {
    accepts_every_upstream_feature_and_forwards_it(&LINE_0_17);
}

#[test]
fn overlay_0_16_accepts_every_upstream_0_16_feature_and_forwards_it() {
    accepts_every_upstream_feature_and_forwards_it(&LINE_0_16);
}

#[test]
fn overlay_0_15_accepts_every_upstream_0_15_feature_and_forwards_it() {
    accepts_every_upstream_feature_and_forwards_it(&LINE_0_15);
}

#[test]
fn patch_faces_declare_their_overlays_features() {
    for line in [LINE_3, LINE_2, LINE_1, LINE_0_17, LINE_0_16, LINE_0_15] {
        assert_eq!(
            features(&ours(line.face)),
            features(&ours(line.overlay)),
            "{} and {} differ",
            line.face,
            line.overlay
        );
    }
}

#[test]
fn patch_faces_carry_upstream_version_and_tag() {
    for line in [LINE_3, LINE_2, LINE_1, LINE_0_17, LINE_0_16, LINE_0_15] {
        let version = pinned(&ours(line.overlay));
        let face = ours(line.face);
        assert_eq!(face["package"]["name"].as_str(), Some("rmcp"));
        assert_eq!(face["package"]["version"].as_str(), Some(version.as_str()));
        let tag = format!("rmcp-v{version}");
        assert_eq!(
            face["dependencies"]["upstream"]["tag"].as_str(),
            Some(tag.as_str()),
            "{}",
            line.face
        );
    }
}
