//! The core's property tests, run long: `cargo bench --bench models`.
//!
//! CI runs each property test with a few hundred or thousand cases from
//! one fixed seed. This runs them (the server's session against its
//! reference model, the client's reconnect machine against a scripted
//! server, the answer read with its `POST` against its model, the frame
//! probe and the cursor parser) with `--cases`
//! cases (default 20,000) for each of `--seeds` seeds (default 4), each
//! seed fresh from the clock unless `--seed` fixes the first, and prints one
//! line per run. A failure prints proptest's shrunk case and exits non-zero:
//! pin it as a plain regression test beside the model.

use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The property tests, as test names in `rmcp-resume-core`.
const MODELS: [&str; 6] = [
    "session::model::model_the_session_keeps_its_promises",
    "reconnect::tests::model::model_the_machine_keeps_its_promises",
    "reconnect::answer::tests::the_answer_alone_or_every_frame_in_order",
    "reconnect::probe::tests::answers_as_the_whole_read_does",
    "reconnect::probe::tests::the_byte_scan_answers_as_serde_json_does",
    "resumption::tests::parsing_never_panics_on_arbitrary_bytes",
];

struct Args {
    /// proptest reads `PROPTEST_CASES` as a `u32`.
    cases: u32,
    seeds: u64,
    seed: Option<u64>,
}

fn args() -> Result<Args, String> {
    let mut parsed = Args {
        cases: 20_000,
        seeds: 4,
        seed: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match arg.as_str() {
            "--cases" => {
                parsed.cases = u32::try_from(value("--cases")?)
                    .map_err(|_| "--cases takes at most 4294967295".to_owned())?;
            }
            "--seeds" => parsed.seeds = value("--seeds")?,
            "--seed" => parsed.seed = Some(value("--seed")?),
            // cargo bench passes `--bench`; nothing else is ours.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("models: {error}; usage: --cases N --seeds K [--seed S]");
            return ExitCode::FAILURE;
        }
    };
    let first = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut failed = false;
    for model in MODELS {
        for k in 0..args.seeds {
            let seed = first.wrapping_add(k);
            let started = Instant::now();
            let output = Command::new(&cargo)
                .args([
                    "test",
                    "--release",
                    "-p",
                    "rmcp-resume-core",
                    "--lib",
                    model,
                ])
                .args(["--", "--exact", "--quiet"])
                .env("PROPTEST_CASES", args.cases.to_string())
                .env("PROPTEST_RNG_SEED", seed.to_string())
                .output();
            // `--exact` with a name that matches nothing passes: the run
            // holds only if it ran this one test.
            let ok = output.as_ref().is_ok_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).contains(" 1 passed;")
            });
            if !ok {
                match &output {
                    Ok(o) => {
                        eprint!("{}", String::from_utf8_lossy(&o.stdout));
                        eprint!("{}", String::from_utf8_lossy(&o.stderr));
                    }
                    Err(error) => eprintln!("models: cannot run {cargo}: {error}"),
                }
            }
            println!(
                "{model}: {} cases, seed {seed}: {} in {:.1} s",
                args.cases,
                if ok { "held" } else { "FAILED" },
                started.elapsed().as_secs_f64()
            );
            failed |= !ok;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
