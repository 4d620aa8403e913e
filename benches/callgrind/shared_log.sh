#!/usr/bin/env bash
# Instructions per tool call of the fork's server on each log, counted by
# callgrind, and Redis's commands per call, from `INFO commandstats`.
#
#   bash benches/callgrind/shared_log.sh [CALLS] [LOGS...]
#
# LOGS (default: local mirror redis) are the shared_log bench's `--serve`
# logs: `local` (the in-process log), `mirror` (a shared log that commits at
# once) and `redis` (a redis-server this script starts on a Unix socket).
# Each server runs alone under callgrind and drive.py makes no call, then
# CALLS sequential calls on one session; the difference over CALLS is the
# server's cost per call, as in run.sh. For `redis`, the same CALLS are made
# once more against the server outside callgrind, and Redis's commandstats
# before and after them (CONFIG RESETSTAT, INFO commandstats) are printed
# per call: one client, so no two calls share a commit. Lease renewals are
# timed by the clock, so under callgrind's slowdown they are a larger share
# than natively. Profiles go to target/callgrind/shared.*.
set -euo pipefail
calls="${1:-1000}"
shift || true
logs=("${@:-local mirror redis}")
# shellcheck disable=SC2206
logs=(${logs[*]})
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$repo/benches/callgrind"
out="$repo/target/callgrind"
mkdir -p "$out"
bench=$(cd "$repo" && cargo bench -j2 --bench shared_log --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "shared_log" and m.get("executable"):
        print(m["executable"])')
[[ -x "$bench" ]] || { echo "callgrind: could not build the shared_log bench" >&2; exit 1; }
total() { sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$1"; }

dir=$(mktemp -d)
redis-server --port 0 --unixsocket "$dir/redis.sock" --save "" --appendonly no --dir "$dir" \
  >"$dir/redis.log" 2>&1 &
redis=$!
trap 'kill "$redis" 2>/dev/null; wait "$redis" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 50); do redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { redis-cli -s "$dir/redis.sock" "$@"; }

# serve LOG OUTFILE|- N: a server on LOG (under callgrind unless OUTFILE is -),
# driven with N calls; for redis, commandstats of the calls to $out/stats.
serve() {
  local log=$1 prof=$2 n=$3 arg=$1 fifo="$out/stdin.shared"
  [[ "$log" == redis ]] && arg="unix://$dir/redis.sock"
  rm -f "$fifo" "$out/url.shared"
  mkfifo "$fifo"
  if [[ "$prof" == - ]]; then
    "$bench" --serve "$arg" <"$fifo" >"$out/url.shared" 2>/dev/null &
  else
    valgrind --tool=callgrind --callgrind-out-file="$prof" "$bench" --serve "$arg" \
      <"$fifo" >"$out/url.shared" 2>"$prof.log" &
  fi
  local server=$!
  exec 3>"$fifo"
  for _ in $(seq 1 600); do [[ -s "$out/url.shared" ]] && break; sleep 0.2; done
  cli config resetstat >/dev/null
  python3 "$here/drive.py" "$(cat "$out/url.shared")" "$n"
  cli info commandstats >"$out/stats"
  exec 3>&-
  wait "$server"
  rm -f "$fifo"
}

for log in "${logs[@]}"; do
  for n in 0 "$calls"; do
    serve "$log" "$out/shared.$log.$n.out" "$n"
  done
  base=$(total "$out/shared.$log.0.out.log")
  full=$(total "$out/shared.$log.$calls.out.log")
  echo "$log: $(( (full - base) / calls )) instructions per call (server)"
  if [[ "$log" == redis ]]; then
    serve redis - "$calls"
    echo "redis, natively, per call of $calls (initialize included):"
    python3 - "$out/stats" "$calls" <<'PY'
import re, sys
calls = int(sys.argv[2])
rows, tc, tu = [], 0, 0
for line in open(sys.argv[1]):
    m = re.match(r"cmdstat_(\S+):calls=(\d+),usec=(\d+)", line)
    if m and m.group(1) not in ("info", "config|resetstat", "config"):
        rows.append((m.group(1), int(m.group(2)), int(m.group(3))))
for name, c, u in sorted(rows, key=lambda r: -r[2]):
    print(f"  {name:24} {c / calls:6.2f} calls  {u / calls:6.2f} usec  {u / max(c, 1):6.2f} usec/call")
print(f"  all, scripts' own included {sum(c for n, c, u in rows) / calls:6.2f} calls  {sum(u for n, c, u in rows) / calls:6.2f} usec")
PY
  fi
done
