#!/usr/bin/env bash
# Instructions per tool call of each side's server, counted by callgrind.
#
#   bash benches/callgrind/run.sh [CALLS]
#
# Each server runs alone (the harness's `--serve`) under callgrind and is
# driven by drive.py: once with no call and once with CALLS calls on one
# session; the difference over CALLS is the server's cost per call.
# Instruction counts do not depend on what else the machine is doing, so
# this finds where the fork spends what upstream does not even on a busy
# machine (the timing benches need a quiet one). Profiles and the
# function-by-function difference go to target/callgrind/.
set -euo pipefail
calls="${1:-1000}"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

declare -A per_call
for side in fork upstream; do
  for n in 0 "$calls"; do
    fifo="$out/stdin.$side.$n"
    rm -f "$fifo" "$out/url.$side.$n"
    mkfifo "$fifo"
    valgrind --tool=callgrind --callgrind-out-file="$out/$side.$n.out" "$harness" --serve "$side" \
      <"$fifo" >"$out/url.$side.$n" 2>"$out/$side.$n.log" &
    server=$!
    exec 3>"$fifo" # the server serves until its stdin closes
    for _ in $(seq 1 600); do [[ -s "$out/url.$side.$n" ]] && break; sleep 0.2; done
    python3 "$here/drive.py" "$(cat "$out/url.$side.$n")" "$n"
    exec 3>&-
    wait "$server"
    rm -f "$fifo"
  done
  base=$(total "$out/$side.0.log")
  full=$(total "$out/$side.$calls.log")
  per_call[$side]=$(( (full - base) / calls ))
  echo "$side server: ${per_call[$side]} instructions per call"
done
python3 -c "print(f'fork / upstream: {${per_call[fork]} / ${per_call[upstream]}:.3f}')"
python3 "$here/diff.py" "$out/fork.$calls.out" "$out/upstream.$calls.out" "$calls" | tee "$out/diff.txt"
