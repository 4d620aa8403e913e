//! Proof (b): each `[patch.crates-io]` face replaces rmcp in an application
//! that asks for plain `rmcp = "3.11"`, `"2.2"`, `"1.8"`, `"0.17"`, `"0.16"`
//! or `"0.15"`, and it builds offline.
//!
//! A face takes upstream from upstream's git tag. Nothing of upstream is
//! committed here: at test time the rmcp package that cargo already
//! downloaded is laid out as a directory source, and the fixture's cargo
//! config replaces the git source with it. The test then asserts what
//! `cargo tree` resolved and runs the fixture, which calls a tool and prints
//! the fork-only `rmcp::fork::PACKAGE`. On 0.15 to 2.2 the fixture also
//! compiles its line's API probe (`crates/api-lines`) against the face.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const UPSTREAM_GIT: &str = "https://github.com/modelcontextprotocol/rust-sdk";

/// One patch face and the untouched application that proves it.
struct Face {
    /// The face's directory, relative to the repository.
    dir: &'static str,
    /// Upstream's exact version, which the face also carries.
    version: &'static str,
    /// What the fixture application writes in its manifest.
    requirement: &'static str,
    /// The fixture's directory under `tests/fixtures`.
    fixture: &'static str,
    /// The tool result the fixture prints.
    result: &'static str,
    /// The line's API probe files (`crates/api-lines/src/probe`), compiled
    /// into the fixture against the face itself, and the reqwest the line's
    /// upstream is built on, which they name. None for 3.11, whose client
    /// transport is the fork's own type (docs/client.md).
    probes: &'static [&'static str],
    reqwest: &'static str,
}

impl Face {
    fn tag(&self) -> String {
        format!("rmcp-v{}", self.version)
    }
}

const FACE_3: Face = Face {
    dir: "crates/rmcp",
    version: "3.11.0",
    requirement: "3.11",
    fixture: "patch-app",
    result: "PATCHED",
    probes: &[],
    reqwest: "0.13",
};

const FACE_1: Face = Face {
    dir: "crates/rmcp-1",
    version: "1.8.0",
    requirement: "1.8",
    fixture: "patch-app-1",
    result: "patched",
    probes: &[
        "server.rs",
        "items.rs",
        "behaviour.rs",
        "client.rs",
        "session.rs",
        "defaults_1x.rs",
    ],
    reqwest: "0.13",
};

const FACE_0_17: Face = Face {
    dir: "crates/rmcp-0-17",
    version: "0.17.0",
    requirement: "0.17",
    fixture: "patch-app-0-17",
    result: "PATCHED",
    probes: &[
        "server.rs",
        "items.rs",
        "behaviour.rs",
        "client.rs",
        "session.rs",
        "literals_0x.rs",
        "defaults_0x.rs",
    ],
    reqwest: "0.13",
};

const FACE_0_16: Face = Face {
    dir: "crates/rmcp-0-16",
    version: "0.16.0",
    requirement: "0.16",
    fixture: "patch-app-0-16",
    result: "PATCHED",
    probes: &[
        "server.rs",
        "items.rs",
        "behaviour.rs",
        "client.rs",
        "session.rs",
        "literals_0x.rs",
        "defaults_0x.rs",
    ],
    reqwest: "0.13",
};

const FACE_0_15: Face = Face {
    dir: "crates/rmcp-0-15",
    version: "0.15.0",
    requirement: "0.15",
    fixture: "patch-app-0-15",
    result: "PATCHED",
    probes: &[
        "server.rs",
        "items.rs",
        "behaviour.rs",
        "client.rs",
        "session.rs",
        "literals_0x.rs",
        "defaults_0x.rs",
    ],
    reqwest: "0.12",
};

const FACE_2: Face = Face {
    dir: "crates/rmcp-2",
    version: "2.2.0",
    requirement: "2.2",
    fixture: "patch-app-2",
    result: "patched",
    probes: &[
        "server.rs",
        "items.rs",
        "behaviour.rs",
        "client.rs",
        "session.rs",
        "defaults_1x.rs",
    ],
    reqwest: "0.13",
};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("neither CARGO_HOME nor HOME is set")
}

/// The unpacked upstream package from the local registry cache. The
/// workspace depends on both lines, so building this test guarantees it is
/// there.
fn downloaded_upstream(version: &str) -> PathBuf {
    let src = cargo_home().join("registry").join("src");
    let found = std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()))
        .filter_map(Result::ok)
        .map(|index| index.path().join(format!("rmcp-{version}")))
        .find(|p| p.join("Cargo.toml").is_file());
    found.unwrap_or_else(|| panic!("rmcp-{version} not unpacked under {}", src.display()))
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn toml_path(p: &Path) -> String {
    p.display().to_string().replace('\\', "/")
}

/// Lays out the fixture app and a directory source standing in for the git tag.
fn prepare(face: &Face, scratch: &Path) -> std::io::Result<PathBuf> {
    let vendor = scratch.join("vendor");
    let pkg = vendor.join("rmcp");
    copy_tree(&downloaded_upstream(face.version), &pkg)?;
    // A git source has no registry checksum, so the package checksum is null;
    // an empty file map skips per-file verification.
    std::fs::write(
        pkg.join(".cargo-checksum.json"),
        r#"{"files":{},"package":null}"#,
    )?;

    let app = scratch.join("app");
    std::fs::create_dir_all(app.join("src"))?;
    std::fs::create_dir_all(app.join(".cargo"))?;
    let mut main = std::fs::read_to_string(
        repo_root()
            .join("tests/fixtures")
            .join(face.fixture)
            .join("main.rs"),
    )?;
    if !face.probes.is_empty() {
        // The API probe of crates/api-lines, against the face itself (that
        // crate compiles it against upstream and the overlay): a break
        // fails this build at the item's name.
        let mut probe = String::from(
            "// The line's API probe (crates/api-lines), compiled against the face.\n\
             #![allow(unused_imports)]\nuse ::reqwest;\nuse ::rmcp;\n",
        );
        for file in face.probes {
            let path = repo_root().join("crates/api-lines/src/probe").join(file);
            probe.push_str(&format!("include!({:?});\n", toml_path(&path)));
        }
        std::fs::write(app.join("src/api_probe.rs"), probe)?;
        main.push_str("\n#[allow(dead_code)]\nmod api_probe;\n");
    }
    std::fs::write(app.join("src/main.rs"), main)?;
    let face_dir = repo_root().join(face.dir);
    std::fs::write(
        app.join("Cargo.toml"),
        format!(
            r#"[package]
name = "{name}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = {{ version = "{requirement}", features = ["server", "client", "macros", "schemars", "transport-streamable-http-server", "transport-streamable-http-client-reqwest"] }}
axum = {{ version = "0.8", default-features = false, features = ["http1", "tokio"] }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
tokio = {{ version = "1", features = ["full"] }}
tokio-util = "0.7"
# What the API probe names beside rmcp.
reqwest = {{ version = "{reqwest}", default-features = false }}
http = "1"
http-body = "1"
http-body-util = "0.1"
bytes = "1"
tower-service = "0.3"
futures = "0.3"

[patch.crates-io]
rmcp = {{ path = "{face}" }}

[workspace]

# Only the build and the run are proved: debug info would make four builds of
# the same dependency graph slower to compile and link, and prove nothing.
[profile.dev]
debug = false
"#,
            name = face.fixture,
            requirement = face.requirement,
            reqwest = face.reqwest,
            face = toml_path(&face_dir)
        ),
    )?;
    std::fs::write(
        app.join(".cargo/config.toml"),
        format!(
            r#"[source.upstream-git]
git = "{UPSTREAM_GIT}"
tag = "{tag}"
replace-with = "upstream-offline"

[source.upstream-offline]
directory = "{vendor}"
"#,
            tag = face.tag(),
            vendor = toml_path(&vendor)
        ),
    )?;
    // Start from the workspace's lock so offline resolution picks versions
    // that are already downloaded. Cargo replaces a git source only once the
    // lock pins its revision, so upstream's entry is re-pointed at the tag's
    // commit, which the package records in `.cargo_vcs_info.json`.
    let lock = std::fs::read_to_string(repo_root().join("Cargo.lock"))?;
    let vcs = std::fs::read_to_string(pkg.join(".cargo_vcs_info.json"))?;
    let sha = vcs_sha1(&vcs).expect("no git sha1 in .cargo_vcs_info.json");
    std::fs::write(app.join("Cargo.lock"), repin_upstream(face, &lock, &sha))?;
    Ok(app)
}

fn vcs_sha1(vcs_info: &str) -> Option<String> {
    let after = &vcs_info[vcs_info.find("\"sha1\"")? + 6..];
    let start = after.find('"')? + 1;
    let len = after[start..].find('"')?;
    let sha = &after[start..start + len];
    (sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha.to_owned())
}

/// Rewrites the lock file's crates.io entry for the face's upstream version
/// into the git entry the face's dependency resolves to. The workspace locks
/// both lines; the other one's entry is left alone, and cargo drops it.
fn repin_upstream(face: &Face, lock: &str, sha: &str) -> String {
    let mut out = String::with_capacity(lock.len());
    let mut name_is_rmcp = false;
    let mut in_upstream = false;
    let version_line = format!("version = \"{}\"", face.version);
    for line in lock.lines() {
        if line == "[[package]]" {
            name_is_rmcp = false;
            in_upstream = false;
        }
        if line == "name = \"rmcp\"" {
            name_is_rmcp = true;
        }
        if name_is_rmcp && line == version_line {
            in_upstream = true;
        }
        if in_upstream && line.starts_with("source = ") {
            out.push_str(&format!(
                "source = \"git+{UPSTREAM_GIT}?tag={tag}#{sha}\"\n",
                tag = face.tag()
            ));
            continue;
        }
        if in_upstream && line.starts_with("checksum = ") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn cargo(app: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(args)
        .arg("--offline")
        .current_dir(app)
        // A target dir of its own inside the workspace's: sharing the
        // workspace's directory could wait on the lock of the running build.
        .env("CARGO_TARGET_DIR", repo_root().join("target/patch-fixture"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("failed to spawn cargo");
    assert!(
        out.status.success(),
        "cargo {args:?} failed in {}:\n--- stdout\n{}\n--- stderr\n{}",
        app.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn prove(face: &Face) {
    let scratch = std::env::temp_dir().join(format!(
        "rmcp-resume-{}-{}",
        face.fixture,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    let app = prepare(face, &scratch).expect("lay out the fixture");

    // What the resolver chose: the app's `rmcp` is the face (path source,
    // upstream's exact version), and the face's `upstream` is the git tag.
    let tree = cargo(&app, &["tree", "--depth", "2", "-e", "normal"]);
    let tree = String::from_utf8_lossy(&tree.stdout);
    let face_path = toml_path(&repo_root().join(face.dir));
    let face_line = format!("rmcp v{} ({face_path})", face.version);
    assert!(
        tree.lines().any(|l| l.contains(&face_line)),
        "cargo tree does not show the patched package {face_line}:\n{tree}"
    );
    let upstream_line = format!("rmcp v{} (", face.version);
    assert!(
        tree.lines()
            .any(|l| l.contains(&upstream_line) && l.contains(UPSTREAM_GIT)),
        "the face does not take upstream from git:\n{tree}"
    );
    let registry_line = format!("rmcp v{}", face.version);
    assert!(
        !tree
            .lines()
            .any(|l| l.trim_start_matches(['│', '├', '└', '─', ' ']) == registry_line),
        "crates.io rmcp is still in the graph:\n{tree}"
    );

    // And the application, unchanged, runs on the fork.
    let run = cargo(&app, &["run", "--quiet"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains(&format!("tool-result={}", face.result)),
        "{stdout}"
    );
    assert!(stdout.contains("fork-package=rmcp\n"), "{stdout}");
    assert!(
        stdout.contains(&format!("fork-upstream={}", face.version)),
        "{stdout}"
    );

    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn patch_face_replaces_crates_io_rmcp_offline() {
    prove(&FACE_3);
}

#[test]
fn patch_face_1_replaces_crates_io_rmcp_1_offline() {
    prove(&FACE_1);
}

#[test]
fn patch_face_2_replaces_crates_io_rmcp_2_offline() {
    prove(&FACE_2);
}

#[test]
fn patch_face_0_17_replaces_crates_io_rmcp_0_17_offline() {
    prove(&FACE_0_17);
}

#[test]
fn patch_face_0_16_replaces_crates_io_rmcp_0_16_offline() {
    prove(&FACE_0_16);
}

#[test]
fn patch_face_0_15_replaces_crates_io_rmcp_0_15_offline() {
    prove(&FACE_0_15);
}
