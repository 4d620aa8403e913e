#!/usr/bin/env python3
"""Per-call instruction counts of two callgrind profiles, function by function.

    diff.py FORK.out UPSTREAM.out CALLS [ROWS]

Each profile is of one server serving CALLS calls. Prints the functions
whose own (exclusive) instructions per call differ most between the two.
"""
import re
import subprocess
import sys

ROW = re.compile(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)")


def profile(path):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if not match:
            continue
        name = match.group(2)
        name = re.sub(r"^\?\?\?:", "", name)
        name = re.sub(r"::h[0-9a-f]{16}", "", name)
        name = re.sub(r" \[[^\]]*\]$", "", name)
        costs[name] = costs.get(name, 0) + int(match.group(1).replace(",", ""))
    return costs


def main():
    fork, upstream = profile(sys.argv[1]), profile(sys.argv[2])
    calls = int(sys.argv[3])
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    diffs = sorted(((fork.get(k, 0) - upstream.get(k, 0), k) for k in set(fork) | set(upstream)), reverse=True)
    print(f"{'fork-upstream':>14} {'fork':>10} {'upstream':>10}  instructions per call, own cost")
    for delta, name in diffs[:rows] + [(None, "…")] + diffs[-10:]:
        if delta is None:
            print("…")
            continue
        print(f"{delta / calls:14.0f} {fork.get(name, 0) / calls:10.0f} {upstream.get(name, 0) / calls:10.0f}  {name[:140]}")


if __name__ == "__main__":
    main()
