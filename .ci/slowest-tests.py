#!/usr/bin/env python3
"""Prints the slowest tests of a nextest run, from its JUnit report.

    .ci/slowest-tests.py target/nextest/default/junit.xml [COUNT]

The test run is the longest step of `.ci/test`; this names where its time
went (wall time per test, and the sum, which the test threads share).
"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def main():
    report = pathlib.Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    if not report.exists():
        sys.exit(f"slowest-tests: {report} is missing (did nextest run?)")
    cases = [
        (float(case.get("time", "0")), f"{case.get('classname')} {case.get('name')}")
        for case in ET.parse(report).getroot().iter("testcase")
    ]
    cases.sort(reverse=True)
    total = sum(seconds for seconds, _ in cases)
    print(f"\nthe {min(count, len(cases))} slowest of {len(cases)} tests ({total:.0f} s in all):")
    for seconds, name in cases[:count]:
        print(f"{seconds:8.1f} s  {name}")


if __name__ == "__main__":
    main()
