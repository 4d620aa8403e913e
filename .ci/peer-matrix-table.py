#!/usr/bin/env python3
"""Builds the client peer matrix's tables from the records of one run.

    .ci/peer-matrix-table.py target/peer-matrix [--write PAGE] [--record PAGE]

Reads every `<row>.json` the matrix tests wrote (tests/peer_matrix.rs, and
the 45 s quiet calls in tests/interop_peers.rs). It makes two tables, a row
per server and a column per shape:

- the checked table: each cell is the fork's outcome and the cell's verdict,
  which a passing run fixes (and what fell short, if anything did). `.ci/test`
  writes it into a copy of the page under target/ and fails when the
  committed page differs. --write PAGE replaces the text between
  `<!-- peer-matrix:begin -->` and `<!-- peer-matrix:end -->`.
- the recorded run: each cell `fork / upstream` with the clients' elapsed
  times, `GET`s and standalone notifications received (`ticks`), and
  upstream's shortfalls in the client's own words. Timings and
  upstream's repeated progress values change from run to run, so this one is
  a sample: printed, written to target/peer-matrix/run.md, and put into the
  page (`<!-- peer-matrix-run:begin -->` … `end`) only with --record PAGE.

It fails when a row's record is missing, so a page never mixes runs.
"""

import json
import pathlib
import sys

ROWS = [
    ("typescript-1.32.2", "TypeScript SDK 1.32.2, its example `InMemoryEventStore`"),
    ("typescript-2.4.0", "TypeScript SDK 2.4.0 (`@modelcontextprotocol/server`, `/node` 2.1.2), an in-memory event store"),
    ("python-2.3.0", "Python SDK 2.3.0, an in-memory event store per session"),
    ("typescript-1.32.2-no-store", "TypeScript SDK 1.32.2, no event store (its default): a typed failure of a cut call passes"),
    ("python-2.3.0-no-store", "Python SDK 2.3.0, no event store (its default): a typed failure of a cut call passes"),
    ("python-2.3.0-shared-store", "Python SDK 2.3.0, one event store for every session, as documented: resumes get other sessions' calls of the same JSON-RPC id (recorded, not failed)"),
    ("rmcp-3.11.0", "rmcp 3.11.0 (upstream)"),
    ("rmcp-1.8.0", "rmcp 1.8.0 (upstream)"),
    ("rmcp-0.17.0", "rmcp 0.17.0 (upstream)"),
    ("rmcp-resume", "rmcp-resume (this fork)"),
    ("typescript-1.32.2-45s-cut", "TypeScript SDK 1.32.2, `quiet 45000` cut once (the fork's default config)"),
    ("typescript-1.32.2-session-lost", "TypeScript SDK 1.32.2, `quiet 12000`, every session forgotten 1 s in and the connection cut: a typed failure passes (the fork's default config)"),
    ("typescript-1.32.2-45s-lifetime", "TypeScript SDK 1.32.2, `quiet 45000`, 20 s lifetime (the fork's default config)"),
    ("rmcp-resume-sampling", "rmcp-resume (this fork): `quiet 4000` and `sample 4000` at once, a sampling request to the client, every connection cut 1 s in: each request answered once (the fork's default config)"),
    ("rmcp-resume-buffering-504", "rmcp-resume (this fork): `quiet 70000` behind a buffering proxy that answers `504` after 60 s: a failure within bounds passes (the fork's default config)"),
    ("rmcp-3.11.0-blackhole-after-keep-alives", "rmcp 3.11.0 (upstream): `quiet 120000`, its connections blackholed 40 s in, after two keep-alives (the fork's default config)"),
]
# Rows whose server's answers vary from run to run (a store shared by every
# session): the checked table says only whether the cell passed.
RECORDED = {"python-2.3.0-shared-store"}
SHAPES = ["quick", "quiet", "poll", "lifetime", "buffered", "churn", "half-cut"]
MARK = {"BUG": "**BUG** ", "FAIL": "**FAIL** ", "ok": "", "n/a": ""}
LIMIT = 400


def client(record):
    text = f"{record['outcome']} {record['elapsed_ms'] / 1000:.1f}s"
    if "gets" in record:
        text += f" {record['gets']} GET"
    if record["discontinuities"]:
        text += " +discontinuity"
    ticks = record.get("ticks")
    if ticks:
        text += f", {ticks['sent'] - len(ticks['lost'])}/{ticks['sent']} ticks"
        if ticks["duplicated"]:
            text += f" +{ticks['duplicated']} copies"
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


def load(directory):
    records = {}
    for name, _ in ROWS:
        path = directory / f"{name}.json"
        if not path.exists():
            sys.exit(f"peer-matrix-table: {path} is missing; run the peer matrix tests first")
        records[name] = json.loads(path.read_text())
    return records


def table(records, timed):
    """The checked table (`timed` false) or the recorded run (`timed` true)."""
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
            if timed:
                row.append(f"{MARK[cell['verdict']]}{client(fork)} / {client(upstream)}")
                sides = (("fork", fork), ("upstream", upstream))
            elif name in RECORDED and cell["verdict"] == "ok":
                # What this server hands a client varies from run to run;
                # the recorded run below says what each client made of it.
                row.append("passes")
                sides = ()
            else:
                gap = " +discontinuity" if fork["discontinuities"] else ""
                row.append(f"{MARK[cell['verdict']]}{fork['outcome']}{gap}")
                # An outcome the row's server allows needs no note here; its
                # words (times, cursors) change from run to run.
                sides = (("fork", fork),) if cell["verdict"] != "ok" else ()
            for side, record in sides:
                if record["outcome"] != "ok":
                    notes.append(f"- {label} × `{shape}`, {side} ({cell['verdict'] if side == 'fork' else 'for the record'}): {why(record)}")
                if record["discontinuities"]:
                    gaps = "; ".join(record["discontinuities"])
                    lost = (record.get("ticks") or {}).get("lost")
                    what = "discontinuity (standalone notifications lost)" if lost else "false discontinuity"
                    notes.append(f"- {label} × `{shape}`, {side}: {what}: {gaps}")
            if timed:
                for note in cell.get("notes", []):
                    notes.append(f"- {label} × `{shape}` (recorded, both clients): {note}")
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    out = "\n".join(lines) + "\n"
    if na_reasons:
        out += "\n" + "\n".join(f"({i + 1}) n/a: {reason}." for i, reason in enumerate(na_reasons)) + "\n"
    if notes:
        out += "\nWhat fell short, in the clients' words:\n\n" + "\n".join(notes) + "\n"
    return out


def replace(page, marker, text):
    body = page.read_text()
    begin, end = f"<!-- {marker}:begin -->\n", f"<!-- {marker}:end -->"
    if begin not in body or end not in body:
        sys.exit(f"peer-matrix-table: {page} has no {begin.strip()} … {end} markers")
    head, _, rest = body.partition(begin)
    _, _, tail = rest.partition(end)
    page.write_text(head + begin + text + end + tail)


def main():
    args = sys.argv[1:]
    pages = {}
    for flag in ("--write", "--record"):
        if flag in args:
            at = args.index(flag)
            pages[flag] = pathlib.Path(args[at + 1])
            del args[at:at + 2]
    directory = pathlib.Path(args[0])
    records = load(directory)
    checked, run = table(records, timed=False), table(records, timed=True)
    (directory / "run.md").write_text(run)
    sys.stdout.write(checked + "\nThis run, with times and upstream's client beside the fork's:\n\n" + run)
    if "--write" in pages:
        replace(pages["--write"], "peer-matrix", checked)
    if "--record" in pages:
        replace(pages["--record"], "peer-matrix", checked)
        replace(pages["--record"], "peer-matrix-run", run)


if __name__ == "__main__":
    main()
