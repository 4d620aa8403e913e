use super::*;

#[test]
fn versions_match_the_manifest() {
    // The patch face must carry upstream's exact version so that
    // `rmcp = "=3.11.0"` pins are patched too.
    match PACKAGE {
        "rmcp-resume" | "rmcp-resume-1" | "rmcp-resume-2" | "rmcp-resume-0-17"
        | "rmcp-resume-0-16" | "rmcp-resume-0-15" => {
            assert_eq!(FORK_VERSION, env!("CARGO_PKG_VERSION"))
        }
        "rmcp" => assert_eq!(UPSTREAM_VERSION, env!("CARGO_PKG_VERSION")),
        other => panic!("compiled under an unexpected package name {other}"),
    }
}
