#!/usr/bin/env python3
"""Check an overlay's run of upstream's tests against upstream's own run.

usage: compare-upstream-suite.py --line N UPSTREAM.txt OVERLAY.txt EXPECTED.tsv [--write PAGE.md]

N is the rmcp line (1, 2 or 3; 0.17, 0.16 or 0.15 for a 0.x minor, which is its own line). The overlay must fail exactly the tests
upstream fails plus those EXPECTED.tsv lists for that line
(`file::test<TAB>lines<TAB>reason`, lines like `1,3`). A listed test that now
passes fails the check too, so the list stays true. With --write, the result
replaces the section of PAGE.md between `<!-- suite-N:begin -->` and
`<!-- suite-N:end -->`.
"""
import argparse
import re
import sys


def read(path):
    text = open(path).read()
    failed = set(re.findall(r"^\s+FAILED (\S+)", text, re.M))
    broken = set(re.findall(r"^(\S+)\s+did not build or run", text, re.M))
    closing = re.findall(r"^upstream-suite: .*$", text, re.M)
    if not closing:
        sys.exit("no closing line in %s: the suite did not run" % path)
    return failed | broken, closing[-1]


def expected(path, line):
    tests = {}
    for no, row in enumerate(open(path), 1):
        row = row.rstrip("\n")
        if not row or row.startswith("#"):
            continue
        fields = row.split("\t")
        if len(fields) != 3 or not fields[2].strip():
            sys.exit("%s:%d: expected `file::test<TAB>lines<TAB>reason`" % (path, no))
        name, lines, reason = fields
        if line in lines.split(","):
            tests[name] = reason
    return tests


def passed(closing):
    m = re.search(r"(\d+) passed", closing)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--line", required=True)
    ap.add_argument("upstream")
    ap.add_argument("overlay")
    ap.add_argument("expected")
    ap.add_argument("--write")
    a = ap.parse_args()
    up_failed, up_line = read(a.upstream)
    ov_failed, ov_line = read(a.overlay)
    on_purpose = expected(a.expected, a.line)
    if passed(up_line) == 0 or passed(ov_line) == 0:
        sys.exit("the upstream suite passed nothing (%s / %s): it did not really run" % (up_line, ov_line))
    print("line %s upstream: %s" % (a.line, up_line))
    print("line %s overlay:  %s" % (a.line, ov_line))
    unexpected = sorted(ov_failed - up_failed - set(on_purpose))
    stale = sorted(set(on_purpose) - ov_failed)
    for name in unexpected:
        print("  overlay fails %s, which upstream passes and %s does not list for line %s" % (name, a.expected, a.line))
    for name in stale:
        print("  %s lists %s for line %s, but the overlay passes it: remove it" % (a.expected, name, a.line))
    if unexpected or stale:
        return 1
    for name in sorted(on_purpose):
        print("  fails on purpose: %s (%s)" % (name, on_purpose[name]))
    print("overlay fails exactly upstream's failures plus the %d listed on purpose" % len(on_purpose))
    if a.write:
        begin, end = "<!-- suite-%s:begin -->" % a.line, "<!-- suite-%s:end -->" % a.line
        text = open(a.write).read()
        if begin not in text or end not in text:
            sys.exit("%s has no %s ... %s section" % (a.write, begin, end))
        rows = ["| Against | Result |", "|---|---|",
                "| upstream rmcp (itself) | %s |" % up_line.split(": ", 1)[1],
                "| the overlay | %s |" % ov_line.split(": ", 1)[1],
                "", "| Test the overlay fails on purpose | Why |", "|---|---|"]
        rows += ["| `%s` | %s |" % (name, on_purpose[name]) for name in sorted(on_purpose)]
        if not on_purpose:
            rows.append("| none | the overlay passes every test upstream passes |")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        open(a.write, "w").write(head + begin + "\n" + "\n".join(rows) + "\n" + end + tail)
        print("updated %s" % a.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
