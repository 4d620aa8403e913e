#!/usr/bin/env python3
"""Checks the links of the project's Markdown.

    python3 scripts/check-doc-links.py

- README.md and docs/**/*.md: every relative link must name a file or directory
  that exists, and a `#fragment` a heading of the file it points into.
- crates/*/README.md are what crates.io shows, where relative links do not
  resolve: they may hold only absolute (https) links.

Prints each broken link and exits 1 when there is one.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!\!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
REF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def targets(text):
    text = FENCE.sub("", text)
    text = CODE.sub("``", text)
    return LINK.findall(text) + REF.findall(text)


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", path.read_text())
    return {slug(h) for h in re.findall(r"^#+\s+(.*)$", text, re.M)}


def external(target):
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None


def main():
    errors = []
    checked = 0
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in targets(md.read_text()):
            if external(target):
                continue
            checked += 1
            file, _, fragment = target.partition("#")
            dest = (md.parent / file).resolve() if file else md
            rel = md.relative_to(ROOT)
            if not dest.exists():
                errors.append(f"{rel}: {target}: no such file")
            elif fragment and dest.is_file() and dest.suffix == ".md":
                if fragment not in anchors(dest):
                    errors.append(f"{rel}: {target}: no heading #{fragment}")
    for md in sorted((ROOT / "crates").glob("*/README.md")):
        for target in targets(md.read_text()):
            checked += 1
            if not target.startswith("https://"):
                rel = md.relative_to(ROOT)
                errors.append(f"{rel}: {target}: not an https link (crates.io cannot resolve it)")
    for e in errors:
        print(e)
    print(f"{checked} links checked, {len(errors)} broken")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
