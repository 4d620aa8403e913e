#!/usr/bin/env python3
"""Builds the SDK x promise table from the probe's reports of one run.

    .ci/probe-table.py target/probe [--write docs/probe.md]

Reads every `<server>.json` the probe tests wrote (tests/probe.rs,
tests/probe_peers.rs) and prints a Markdown table; with --write it replaces
the text between `<!-- probe-table:begin -->` and `<!-- probe-table:end -->`.
It fails when a server's report is missing, so the page never mixes runs.
"""
import json
import pathlib
import sys

SERVERS = [
    ("rmcp-resume", "rmcp-resume (this fork)"),
    ("rmcp-3.11.0", "rmcp 3.11.0 (upstream)"),
    ("typescript-sdk", "TypeScript SDK, in-memory event store"),
    ("python-sdk", "Python SDK, in-memory event store"),
]
MARK = {"PASS": "PASS", "FAIL": "**FAIL**", "NOT_CHECKED": "not checked"}


def table(directory):
    reports = {}
    for name, _ in SERVERS:
        path = directory / f"{name}.json"
        if not path.exists():
            sys.exit(f"probe-table: {path} is missing; run the probe tests first")
        reports[name] = json.loads(path.read_text())
    checks = reports[SERVERS[0][0]]["checks"]
    lines = [
        "| Promise | " + " | ".join(label for _, label in SERVERS) + " |",
        "|---|" + "---|" * len(SERVERS),
    ]
    for check in checks:
        cells = []
        for name, _ in SERVERS:
            found = [c for c in reports[name]["checks"] if c["id"] == check["id"]]
            cells.append(MARK[found[0]["verdict"]] if found else "—")
        lines.append(f"| `{check['id']}`: {check['promise']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    args = sys.argv[1:]
    write = None
    if "--write" in args:
        at = args.index("--write")
        write = pathlib.Path(args[at + 1])
        del args[at:at + 2]
    text = table(pathlib.Path(args[0]))
    if write is None:
        sys.stdout.write(text)
        return
    page = write.read_text()
    begin, end = "<!-- probe-table:begin -->\n", "<!-- probe-table:end -->"
    head, _, rest = page.partition(begin)
    _, _, tail = rest.partition(end)
    write.write_text(head + begin + text + end + tail)


if __name__ == "__main__":
    main()
