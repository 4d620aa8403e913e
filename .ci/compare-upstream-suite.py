#!/usr/bin/env python3
"""Fail unless the overlay passes every upstream test that upstream passes.

A test the overlay fails on purpose must be named, as `file::test`, in
CHANGELOG.md (the "Upstream tests we fail on purpose" list).
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


def passed(line):
    m = re.search(r"(\d+) passed", line)
    return int(m.group(1)) if m else 0


up_failed, up_line = read(sys.argv[1])
ov_failed, ov_line = read(sys.argv[2])
changelog = open(sys.argv[3]).read()
if passed(up_line) == 0 or passed(ov_line) == 0:
    sys.exit("the upstream suite passed nothing (%s / %s): it did not really run" % (up_line, ov_line))
print("upstream: %s" % up_line)
print("overlay:  %s" % ov_line)
regressions = sorted(t for t in ov_failed - up_failed if t not in changelog)
if regressions:
    print("overlay fails upstream tests that upstream passes and CHANGELOG.md does not name:")
    for t in regressions:
        print("  " + t)
    sys.exit(1)
print("overlay passes every upstream test upstream passes (on-purpose differences are in CHANGELOG.md)")
