//! The overlay accepts exactly upstream's feature names, forwards each one,
//! and the patch face declares the same table.

use std::collections::BTreeMap;
use std::path::PathBuf;

type Features = BTreeMap<String, Vec<String>>;

fn features(manifest: &str) -> Features {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(manifest);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let doc: toml::Table = text.parse().expect("manifest is valid TOML");
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

/// Upstream's 29 declared feature names plus the implicit `base64` and
/// `uuid`, as published in rmcp 3.11.0.
const UPSTREAM_FEATURES: [&str; 31] = [
    "__reqwest",
    "auth",
    "auth-client-credentials-jwt",
    "auth-enterprise-managed",
    "base64",
    "client",
    "client-side-sse",
    "default",
    "elicitation",
    "local",
    "macros",
    "request-state",
    "reqwest",
    "reqwest-native-tls",
    "reqwest-tls-no-provider",
    "schemars",
    "server",
    "server-side-http",
    "skills-fs",
    "tower",
    "transport-async-rw",
    "transport-child-process",
    "transport-io",
    "transport-streamable-http-client",
    "transport-streamable-http-client-reqwest",
    "transport-streamable-http-client-unix-socket",
    "transport-streamable-http-server",
    "transport-streamable-http-server-session",
    "transport-worker",
    "uuid",
    "which-command",
];

#[test]
fn overlay_accepts_every_upstream_feature_and_forwards_it() {
    let overlay = features("crates/rmcp-resume/Cargo.toml");
    let names: Vec<_> = overlay.keys().map(String::as_str).collect();
    assert_eq!(names, UPSTREAM_FEATURES);
    for (name, enables) in &overlay {
        if name == "default" {
            assert_eq!(
                enables,
                &["base64", "macros", "server"],
                "upstream's default set"
            );
        } else {
            assert!(
                enables.contains(&format!("upstream/{name}")),
                "feature {name} does not forward to upstream/{name}: {enables:?}"
            );
        }
    }
}

#[test]
fn patch_face_declares_the_same_features() {
    assert_eq!(
        features("crates/rmcp/Cargo.toml"),
        features("crates/rmcp-resume/Cargo.toml")
    );
}
