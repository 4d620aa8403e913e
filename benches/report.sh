#!/usr/bin/env bash
# Turns the last `cargo bench` run into docs/benchmarks.md's table and
# docs/bench-ratios.png. Installs matplotlib (PyPI) into target/bench-venv.
#   cargo bench && bash benches/report.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/target/bench-venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "matplotlib==3.9.2"
fi
"$venv/bin/python" "$repo/benches/report.py" "$@"
