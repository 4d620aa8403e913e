#!/usr/bin/env bash
# Runs the shared log's bench as a deployment runs Redis: the bench process
# (servers and their load) on one core, every redis-server it starts on the
# other, so Redis does not compete with the server it serves (issue 45).
#
#   benches/shared_log/pinned.sh BENCH_BINARY [ARGS...]
#
# BENCH_BINARY is the built bench (`cargo bench --bench shared_log --no-run`
# prints it); ARGS go to it (`--profile-calls 16 redis`, `--quick`). With
# PINNED=0 nothing is pinned, for the unpinned arm of the same comparison.
# At the end it prints the CPU seconds each process used (utime + stime from
# /proc), so that CPU per call is the figure divided by the calls the bench
# printed.
set -euo pipefail
bin=$1
shift
pinned=${PINNED:-1}
ticks=$(getconf CLK_TCK)
if [[ "$pinned" == "1" ]]; then
  taskset -c 0 "$bin" "$@" &
else
  "$bin" "$@" &
fi
pid=$!
declare -A seen=()
# Empty once the process is gone: the last reading taken while it ran stands.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || true; }
declare -A last=()
# Bounded by the bench itself: the loop ends when it exits.
while kill -0 "$pid" 2>/dev/null; do
  for r in $(pgrep -x redis-server -P "$pid" || true); do
    if [[ -z "${seen[$r]:-}" && "$pinned" == "1" ]]; then
      taskset -a -pc 1 "$r" >/dev/null
    fi
    seen[$r]=1
    t=$(cpu "$r")
    [[ -n "$t" ]] && last[$r]=$t
  done
  t=$(cpu "$pid")
  [[ -n "$t" ]] && last[bench]=$t
  sleep 0.2
done
wait "$pid"
for key in "${!last[@]}"; do
  awk -v k="$key" -v t="${last[$key]}" -v hz="$ticks" \
    'BEGIN { printf "cpu %s: %.2f s\n", (k == "bench" ? "bench process" : "redis-server " k), t / hz }'
done
