#!/usr/bin/env python3
"""Issue 45's three pinned goals, for one or more builds of the shared log's bench.

    python3 benches/shared_log/goals.py [--rounds N] NAME=BENCH_BINARY [NAME=BINARY ...]

BENCH_BINARY is a release build of `benches/shared_log.rs` (`cargo bench --bench
shared_log --no-run` prints it; copy it aside to compare two commits). Each round runs,
for every build in turn, `pinned.sh BINARY --profile-calls C local|redis` at 16 and 64
clients: the bench process on core 0, `redis-server` on core 1. A run is three 5 s
windows; its calls are the printed rates times 5 s, its CPU the utime + stime pinned.sh
reads from /proc. Prints each build's medians over the rounds:

- calls/s on Redis against the in-process log of the same round (goal: at least 0.85);
- the bench process's CPU per call on Redis against in-process (goal: at most 1.15);
- `redis-server`'s CPU per call, in microseconds (goal: at most 15).
"""
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW_S = 5


def run(binary, clients, backend):
    out = subprocess.run(
        ["bash", os.path.join(HERE, "pinned.sh"), binary, "--profile-calls", str(clients), backend],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    rates = [int(m) for m in re.findall(r"(\d+) calls/s", out)]
    if len(rates) != 3:
        raise SystemExit(f"expected three windows, got {out!r}")
    calls = sum(rates) * WINDOW_S
    bench = float(re.search(r"cpu bench process: ([\d.]+) s", out).group(1))
    redis = sum(float(s) for s in re.findall(r"cpu redis-server \d+: ([\d.]+) s", out))
    return {"rate": statistics.median(rates), "bench_us": bench / calls * 1e6, "redis_us": redis / calls * 1e6}


def main():
    args = sys.argv[1:]
    rounds = 3
    if args[:1] == ["--rounds"]:
        rounds, args = int(args[1]), args[2:]
    builds = [a.split("=", 1) for a in args]
    if not builds:
        raise SystemExit(__doc__)
    rows = {(name, c): [] for name, _ in builds for c in (16, 64)}
    for r in range(rounds):
        for clients in (16, 64):
            for name, binary in builds:
                local, redis = run(binary, clients, "local"), run(binary, clients, "redis")
                row = {
                    "local": local["rate"], "redis": redis["rate"],
                    "rate": redis["rate"] / local["rate"],
                    "local_us": local["bench_us"], "shared_us": redis["bench_us"],
                    "cpu": redis["bench_us"] / local["bench_us"], "redis_us": redis["redis_us"],
                }
                rows[(name, clients)].append(row)
                print(f"round {r + 1} {name} {clients} clients: " + ", ".join(
                    f"{k} {v:.3f}" if v < 100 else f"{k} {v:.0f}" for k, v in row.items()), flush=True)
    print("\n| build | clients | in-process calls/s | Redis calls/s | Redis / in-process (>= 0.85) "
          "| bench µs/call in-process / Redis | ratio (<= 1.15) | redis-server µs/call (<= 15) |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, clients), got in rows.items():
        med = {k: statistics.median(row[k] for row in got) for k in got[0]}
        print(f"| {name} | {clients} | {med['local']:,.0f} | {med['redis']:,.0f} | {med['rate']:.2f}× "
              f"| {med['local_us']:.1f} / {med['shared_us']:.1f} | {med['cpu']:.2f}× | {med['redis_us']:.1f} |")
    print(f"\nmedians of {rounds} rounds")


if __name__ == "__main__":
    main()
