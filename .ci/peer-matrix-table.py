#!/usr/bin/env python3
"""Builds the client peer matrix's table from the records of one run.

    .ci/peer-matrix-table.py target/peer-matrix [--write docs/verification.md]

Reads every `<row>.json` the matrix tests wrote (tests/peer_matrix.rs, and
the 45 s quiet calls in tests/interop_peers.rs) and prints a Markdown table:
a row per server, a column per shape, each cell `fork / upstream`, then what
fell short, with the clients' own words. With --write it replaces the text
between `<!-- peer-matrix:begin -->` and `<!-- peer-matrix:end -->`. It fails
when a row's record is missing, so the page never mixes runs.
"""
import json
import pathlib
import sys

ROWS = [
    ("typescript-1.32.2", "TypeScript SDK 1.32.2, its example `InMemoryEventStore`"),
    ("typescript-2.4.0", "TypeScript SDK 2.4.0 (`@modelcontextprotocol/server`, `/node` 2.1.2), an in-memory event store"),
    ("python-2.3.0", "Python SDK 2.3.0, an in-memory event store per session"),
    ("rmcp-3.11.0", "rmcp 3.11.0 (upstream)"),
    ("rmcp-1.8.0", "rmcp 1.8.0 (upstream)"),
    ("rmcp-resume", "rmcp-resume (this fork)"),
    ("typescript-1.32.2-45s-cut", "TypeScript SDK 1.32.2, `quiet 45000` cut once (the fork's default config)"),
    ("typescript-1.32.2-45s-lifetime", "TypeScript SDK 1.32.2, `quiet 45000`, 20 s lifetime (the fork's default config)"),
]
SHAPES = ["quick", "quiet", "poll", "lifetime", "buffered", "churn", "half-cut"]
MARK = {"BUG": "**BUG** ", "FAIL": "**FAIL** ", "ok": "", "n/a": ""}
LIMIT = 400


def client(record):
    text = f"{record['outcome']} {record['elapsed_ms'] / 1000:.1f}s"
    if record["discontinuities"]:
        text += " +discontinuity"
    return text


def why(record):
    """The first call that fell short, in the client's own words."""
    for call in record["calls"]:
        if call["outcome"] != "ok":
            detail = call["detail"] or "-"
            if len(detail) > LIMIT:
                detail = detail[:LIMIT] + "…"
            seen = ", ".join(f"{v:g}" for v in call["seen"]) or "none"
            return (
                f"`{call['tool']} {json.dumps(call['args'], separators=(',', ':'))}`: "
                f"{call['outcome']} after {call['elapsed_ms'] / 1000:.1f}s, progress seen {seen}: {detail}"
            )
    return record.get("detail") or ""


def table(directory):
    records = {}
    for name, _ in ROWS:
        path = directory / f"{name}.json"
        if not path.exists():
            sys.exit(f"peer-matrix-table: {path} is missing; run the peer matrix tests first")
        records[name] = json.loads(path.read_text())
    lines = [
        "| Server | " + " | ".join(f"`{shape}`" for shape in SHAPES) + " |",
        "|---|" + "---|" * len(SHAPES),
    ]
    notes, na_reasons = [], []
    for name, label in ROWS:
        cells = {cell["shape"]: cell for cell in records[name]["cells"]}
        row = []
        for shape in SHAPES:
            cell = cells.get(shape)
            if cell is None:
                row.append("—")
                continue
            if cell["na"]:
                if cell["na"] not in na_reasons:
                    na_reasons.append(cell["na"])
                row.append(f"n/a ({na_reasons.index(cell['na']) + 1})")
                continue
            fork, upstream = cell["fork"], cell["upstream"]
            row.append(f"{MARK[cell['verdict']]}{client(fork)} / {client(upstream)}")
            for side, record in (("fork", fork), ("upstream", upstream)):
                if record["outcome"] != "ok":
                    notes.append(f"- {label} × `{shape}`, {side} ({cell['verdict'] if side == 'fork' else 'for the record'}): {why(record)}")
                if record["discontinuities"]:
                    gaps = "; ".join(record["discontinuities"])
                    notes.append(f"- {label} × `{shape}`, {side}: false discontinuity: {gaps}")
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    out = "\n".join(lines) + "\n"
    if na_reasons:
        out += "\n" + "\n".join(f"({i + 1}) n/a: {reason}." for i, reason in enumerate(na_reasons)) + "\n"
    if notes:
        out += "\nWhat fell short, in the clients' words:\n\n" + "\n".join(notes) + "\n"
    return out


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
    begin, end = "<!-- peer-matrix:begin -->\n", "<!-- peer-matrix:end -->"
    if begin not in page or end not in page:
        sys.exit(f"peer-matrix-table: {write} has no {begin.strip()} … {end} markers")
    head, _, rest = page.partition(begin)
    _, _, tail = rest.partition(end)
    write.write_text(head + begin + text + end + tail)


if __name__ == "__main__":
    main()
