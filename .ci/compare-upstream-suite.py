#!/usr/bin/env python3
"""Check the overlay's run of upstream's tests against upstream's own run.

usage: compare-upstream-suite.py UPSTREAM.txt OVERLAY.txt EXPECTED.tsv [--write PAGE.md]

The overlay must fail exactly the tests upstream fails plus those listed in
EXPECTED.tsv (`file::test<TAB>reason`). A listed test that now passes fails
the check too, so the list stays true. With --write, the result replaces the
section of PAGE.md between `<!-- suite:begin -->` and `<!-- suite:end -->`.
"""
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


def expected(path):
    tests = {}
    for no, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        name, sep, reason = line.partition("\t")
        if not sep or not reason.strip():
            sys.exit("%s:%d: expected `file::test<TAB>reason`" % (path, no))
        tests[name] = reason
    return tests


def passed(line):
    m = re.search(r"(\d+) passed", line)
    return int(m.group(1)) if m else 0


up_failed, up_line = read(sys.argv[1])
ov_failed, ov_line = read(sys.argv[2])
on_purpose = expected(sys.argv[3])
if passed(up_line) == 0 or passed(ov_line) == 0:
    sys.exit("the upstream suite passed nothing (%s / %s): it did not really run" % (up_line, ov_line))
print("upstream: %s" % up_line)
print("overlay:  %s" % ov_line)
unexpected = sorted(ov_failed - up_failed - set(on_purpose))
stale = sorted(set(on_purpose) - ov_failed)
for name in unexpected:
    print("  overlay fails %s, which upstream passes and %s does not list" % (name, sys.argv[3]))
for name in stale:
    print("  %s lists %s, but the overlay passes it: remove it" % (sys.argv[3], name))
if unexpected or stale:
    sys.exit(1)
for name in sorted(on_purpose):
    print("  fails on purpose: %s (%s)" % (name, on_purpose[name]))
print("overlay fails exactly upstream's failures plus the %d listed on purpose" % len(on_purpose))

if "--write" in sys.argv[4:]:
    page = sys.argv[sys.argv.index("--write") + 1]
    begin, end = "<!-- suite:begin -->", "<!-- suite:end -->"
    text = open(page).read()
    if begin not in text or end not in text:
        sys.exit("%s has no %s ... %s section" % (page, begin, end))
    rows = ["| Against | Result |", "|---|---|",
            "| upstream rmcp (itself) | %s |" % up_line.split(": ", 1)[1],
            "| rmcp-resume (the overlay) | %s |" % ov_line.split(": ", 1)[1],
            "", "| Test the overlay fails on purpose | Why |", "|---|---|"]
    rows += ["| `%s` | %s |" % (name, on_purpose[name]) for name in sorted(on_purpose)]
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    open(page, "w").write(head + begin + "\n" + "\n".join(rows) + "\n" + end + tail)
    print("updated %s" % page)
