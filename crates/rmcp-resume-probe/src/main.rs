//! `rmcp-resume-probe URL`: the report card for one MCP endpoint.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rmcp_resume_probe::{Options, Target, Verdict, probe};

/// Audits an MCP server's streamable-HTTP resumption through the real
/// network path. Exit code: 0 when nothing failed, 1 when a check failed,
/// 2 when the endpoint could not be probed.
#[derive(Debug, Parser)]
#[command(name = "rmcp-resume-probe", version)]
struct Args {
    /// The MCP endpoint, e.g. https://host/mcp.
    url: String,
    /// An extra request header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
    /// A tool whose call streams (progress, then its response).
    #[arg(long)]
    tool: Option<String>,
    /// The tool's arguments, as JSON.
    #[arg(long, default_value = "{}", requires = "tool")]
    args: String,
    /// A tool whose call makes the server notify on the standalone stream.
    #[arg(long)]
    notify_tool: Option<String>,
    /// The notify tool's arguments, as JSON.
    #[arg(long, default_value = "{}", requires = "notify_tool")]
    notify_args: String,
    /// Seconds to hold a quiet stream open (0: skip that check).
    #[arg(long, default_value_t = 30.0)]
    hold: f64,
    /// Seconds one request may wait for its answer.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Seconds of silence that end the reading of an answer.
    #[arg(long, default_value_t = 2.0)]
    quiet: f64,
    /// Seconds the evicted-cursor check lets the tool run before resuming.
    #[arg(long, default_value_t = 2.0)]
    settle: f64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn seconds(name: &str, value: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("--{name} {value}: not a duration"))
}

fn json(name: &str, value: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(value).map_err(|e| format!("--{name}: not JSON ({e})"))
}

fn options(args: &Args) -> Result<Options, String> {
    Ok(Options {
        tool: match &args.tool {
            Some(tool) => Some((tool.clone(), json("args", &args.args)?)),
            None => None,
        },
        notify: match &args.notify_tool {
            Some(tool) => Some((tool.clone(), json("notify-args", &args.notify_args)?)),
            None => None,
        },
        hold: seconds("hold", args.hold)?,
        quiet: seconds("quiet", args.quiet)?,
        settle: seconds("settle", args.settle)?,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let setup = options(&args).and_then(|options| {
        let target = Target::new(&args.url, &args.headers, seconds("timeout", args.timeout)?)
            .map_err(|e| e.to_string())?;
        Ok((target, options))
    });
    let (target, options) = match setup {
        Ok(setup) => setup,
        Err(error) => {
            eprintln!("rmcp-resume-probe: {error}");
            return ExitCode::from(2);
        }
    };
    let terminal = std::io::stderr().is_terminal();
    let waiting = move |what: &str| {
        if terminal {
            eprintln!("… {what}");
        }
    };
    // The whole run is bounded: every check's waits, plus room for the rest.
    let limit = options.hold + options.settle + target.timeout * 40 + options.quiet * 40;
    let report = match tokio::time::timeout(limit, probe(&target, &options, &waiting)).await {
        Err(_) => {
            eprintln!("rmcp-resume-probe: no report within {limit:?}");
            return ExitCode::from(2);
        }
        Ok(Err(error)) => {
            eprintln!("rmcp-resume-probe: {error}");
            return ExitCode::from(2);
        }
        Ok(Ok(report)) => report,
    };
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    if report.count(Verdict::Fail) > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
