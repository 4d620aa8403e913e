#!/usr/bin/env python3
"""Turns one `cargo bench` run into docs/benchmarks.md's table and chart.

Reads criterion's estimates (target/criterion/**/new/estimates.json) and the
harness's results (target/bench-report/harness.json), writes
target/bench-report/table.md and docs/bench-ratios.png, and replaces the
section of docs/benchmarks.md between the `bench:begin` and `bench:end` markers.

Every figure is a ratio fork/upstream measured in the same run; the chart
shows each as "fork cost relative to upstream" (below 1: the fork is better).
The harness's `soak` and `flood` sections go between the `reliability:begin`
and `reliability:end` markers; `--reliability-only` updates just those (no
criterion run needed).
Usage: python3 benches/report.py [--no-page] [--reliability-only]
"""

import json
import math
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITERION = ROOT / "target" / "criterion"
HARNESS = ROOT / "target" / "bench-report" / "harness.json"
TABLE = ROOT / "target" / "bench-report" / "table.md"
CHART = ROOT / "docs" / "bench-ratios.png"
PAGE = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
RELIABILITY_BEGIN, RELIABILITY_END = "<!-- reliability:begin -->", "<!-- reliability:end -->"


def median_ns(*parts):
    path = CRITERION.joinpath(*parts, "new", "estimates.json")
    if not path.exists():
        return None
    return json.loads(path.read_text())["median"]["point_estimate"]


class Row:
    """One figure: its value on each side, and which direction is better."""

    def __init__(self, figure, unit, upstream, fork, lower_is_better, note=""):
        self.figure, self.unit = figure, unit
        self.upstream, self.fork = upstream, fork
        self.lower_is_better, self.note = lower_is_better, note

    def ratio(self):
        if not all(isinstance(v, (int, float)) for v in (self.upstream, self.fork)):
            return None
        if self.upstream == 0:
            return math.inf if self.fork else 1.0
        return self.fork / self.upstream

    def cost(self):
        """Fork cost relative to upstream: below 1 means the fork is better."""
        if isinstance(self.upstream, str):
            return 0.0  # upstream never answers
        r = self.ratio()
        if r is None:
            return None
        if self.lower_is_better:
            return r
        return math.inf if r == 0 else 1 / r


def fmt(value, unit):
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if value >= 100:
        return f"{value:,.0f} {unit}"
    if value >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"


def rows():
    out = []
    harness = json.loads(HARNESS.read_text()) if HARNESS.exists() else {}

    lat = harness.get("latency", {})
    if lat:
        for p in ("p50", "p99"):
            out.append(Row(f"Tool call round trip, {p} (1 client, full stack)", "µs",
                           lat["upstream"][f"{p}_us"], lat["fork"][f"{p}_us"], True))

    throughput = harness.get("throughput", {})
    for k in (1, 16, 64):
        row = throughput.get(str(k))
        if row:
            # Interleaved rounds (harness): the robust figure.
            up, fork = row["upstream"]["calls_per_s"], row["fork"]["calls_per_s"]
            note = "median of interleaved rounds"
        else:
            to_rate = lambda ns: None if ns is None else k / (ns * 1e-9)
            up = to_rate(median_ns("concurrent", "upstream", str(k)))
            fork = to_rate(median_ns("concurrent", "fork", str(k)))
            note = "criterion"
        out.append(Row(f"Tool calls/s, {k} concurrent client{'s' if k > 1 else ''}", "calls/s",
                       up, fork, False, note))

    allocs = harness.get("allocations", {})
    if allocs:
        out.append(Row("Heap allocations per tool call (client + server)", "allocs",
                       allocs["server-upstream/client-upstream"], allocs["server-fork/client-fork"], True,
                       f"fork server + upstream client: {allocs['server-fork/client-upstream']:.0f}; "
                       f"upstream server + fork client: {allocs['server-upstream/client-fork']:.0f}"))

    for pair, what in (("server", "same client, each server"), ("client", "each client, same server")):
        up, fork = median_ns("round_trip", f"{pair}_upstream"), median_ns("round_trip", f"{pair}_fork")
        us = lambda ns: None if ns is None else ns / 1e3
        out.append(Row(f"Tool call, {what} (mean of criterion samples)", "µs", us(up), us(fork), True))

    up, fork = median_ns("notifications", "upstream"), median_ns("notifications", "fork")
    rate = lambda ns: None if ns is None else 256 / (ns * 1e-9)
    out.append(Row("Standalone-stream notifications", "events/s", rate(up), rate(fork), False))

    for n in (16, 256, 4096):
        up, fork = median_ns("replay", "upstream", str(n)), median_ns("replay", "fork", str(n))
        ms = lambda ns: None if ns is None else ns / 1e6
        out.append(Row(f"Resume: replay {n} retained events", "ms", ms(up), ms(fork), True))

    for n, row in sorted(harness.get("memory", {}).items(), key=lambda kv: int(kv[0])):
        kib = lambda side: row[side]["bytes_per_session"] / 1024
        out.append(Row(f"Memory per idle session with an open GET, {int(n):,} sessions", "KiB",
                       kib("upstream"), kib("fork"), True, "peak RSS delta / sessions"))

    stalled = harness.get("stalled", {})
    if stalled:
        up, fork = stalled["upstream"], stalled["fork"]
        def stalled_ms(side):
            if side["stalled_answered"] == 0:
                return None
            return side["stalled_p50_us"] / 1e3
        limit = up["timeout_ms"]
        row = Row("Other requests while the standalone reader stalls, p50", "ms",
                  stalled_ms(up), stalled_ms(fork), True,
                  f"baseline p50: upstream {up['baseline_p50_us'] / 1e3:.2f} ms, fork {fork['baseline_p50_us'] / 1e3:.2f} ms")
        if row.upstream is None:
            row.upstream = f"blocked (> {limit / 1000:.0f} s, {up['stalled_timeouts']} of {up['stalled_timeouts']} timed out)"
        out.append(row)

    wedged = harness.get("wedged", {})
    if wedged:
        up, fork = wedged["upstream"], wedged["fork"]
        w = up["window_s"]
        out.append(Row(f"One wedged stream: resume requests in {w:.0f} s", "requests",
                       up["resumes"], fork["resumes"], True,
                       f"call: upstream {up['ending']}, fork {fork['ending']} after {fork['ended_after_s']:.1f} s"))
        out.append(Row(f"One wedged stream: WARN lines in {w:.0f} s", "lines",
                       up["warn_lines"], fork["warn_lines"], True))
    return out, harness.get("machine", {})


def table(rows, machine):
    lines = [
        "| Figure | Upstream 3.11.0 | Fork | Fork / upstream | Note |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = r.ratio()
        if isinstance(r.upstream, str):
            ratio_text = "upstream never answers"
        elif ratio is None:
            ratio_text = "n/a"
        elif math.isinf(ratio):
            ratio_text = "∞"
        else:
            better = "lower is better" if r.lower_is_better else "higher is better"
            ratio_text = f"{ratio:.2f} ({better})"
        lines.append(f"| {r.figure} | {fmt(r.upstream, r.unit)} | {fmt(r.fork, r.unit)} | {ratio_text} | {r.note} |")
    cpu = machine.get("cpu") or platform.processor() or "unknown CPU"
    lines.append("")
    lines.append(f"Machine: {cpu}, {machine.get('cores', '?')} cores, {machine.get('os', sys.platform)}; "
                 "127.0.0.1; one `cargo bench` run, both sides in the same run.")
    return "\n".join(lines)


def chart(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = []
    for r in rows:
        cost = r.cost()
        if cost is None:
            continue
        if isinstance(r.upstream, str):
            label = "upstream blocks"
        elif cost == 0:
            label = f"fork: 0 (upstream: {r.upstream:g})"
        else:
            label = f"{cost:.2f}"
        shown.append((r.figure, cost, label))
    floor, ceiling = 1e-3, 10.0
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(shown) + 1.4))
    labels = [f for f, _, _ in shown]
    values = [min(max(c, floor), ceiling) for _, c, _ in shown]
    colors = ["#2a9d8f" if c <= 1.05 else "#e76f51" for _, c, _ in shown]
    ax.barh(range(len(shown)), values, color=colors)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(floor / 1.5, ceiling)
    ax.set_xlabel("fork cost relative to upstream rmcp 3.11.0 (log scale; < 1: fork better)")
    for i, (_, c, text) in enumerate(shown):
        ax.text(max(min(c, ceiling), floor) * 1.1, i, text, va="center", fontsize=7)
    ax.set_title("rmcp-resume against upstream rmcp, same run")
    fig.tight_layout()
    CHART.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(CHART, dpi=110)


def reliability(harness):
    lines = []
    soak = harness.get("soak", {})
    if soak:
        lines += [
            "| Shape | Side | calls | whole | duplicated | silent gaps | failed | hung | ticks lost | ticks duplicated | cuts | resumes |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for shape, row in soak.items():
            for side in ("upstream", "fork"):
                t = row.get(side)
                if not t:
                    continue
                lines.append(
                    f"| {shape} | {side} | {t['calls']} | {t['whole']} | {t['duplicated']} | {t['gapped']} "
                    f"| {t['failed']} | {t['hung']} | {t['ticks_lost']} of {t['ticks_sent']} "
                    f"| {t['ticks_duplicated']} | {t['cuts']} | {t['resumes']} |"
                )
        lines.append("")
    flood = harness.get("flood", {})
    if flood:
        mib = 1 << 20
        lines += [
            "| Server | sessions | flooded | replay budget (all sessions) | RSS growth |",
            "|---|---|---|---|---|",
        ]
        for name, r in flood.items():
            budget = (
                "none (16 events a stream)"
                if name.startswith("upstream")
                else f"{r['budget_bytes'] / mib:.0f} MiB"
            )
            lines.append(
                f"| {name} | {r['sessions']} | {r['flooded_bytes'] / mib:.0f} MiB "
                f"| {budget} | {r['growth_bytes'] / mib:.1f} MiB |"
            )
    return "\n".join(lines)


def replace_section(begin, end, text):
    page = PAGE.read_text()
    if begin in page and end in page:
        head, rest = page.split(begin, 1)
        _, tail = rest.split(end, 1)
        PAGE.write_text(head + f"{begin}\n{text}\n{end}" + tail)
        print(f"updated {PAGE}")


def main():
    harness = json.loads(HARNESS.read_text()) if HARNESS.exists() else {}
    text = reliability(harness)
    print(text)
    # A run without the soak and flood sections leaves the page's reliability
    # tables as they are, rather than blanking them.
    if "--no-page" not in sys.argv and ("soak" in harness or "flood" in harness):
        replace_section(RELIABILITY_BEGIN, RELIABILITY_END, text)
    if "--reliability-only" in sys.argv:
        return
    out_rows, machine = rows()
    text = table(out_rows, machine)
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(text + "\n")
    chart(out_rows)
    print(text)
    if "--no-page" not in sys.argv:
        page = PAGE.read_text()
        if BEGIN in page and END in page:
            head, rest = page.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            section = f"{BEGIN}\n{text}\n\n![fork/upstream ratios](bench-ratios.png)\n{END}"
            PAGE.write_text(head + section + tail)
            print(f"updated {PAGE}")


if __name__ == "__main__":
    main()
