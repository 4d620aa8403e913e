#!/usr/bin/env bash
# Instructions per tool call of each side's client, counted by callgrind.
#
#   bash benches/callgrind/client.sh [CALLS] [SERVER]
#
# The counterpart of run.sh for the client: one server (SERVER, upstream by
# default, so both clients talk to the same code) runs outside callgrind, and
# each side's client runs alone under it (the harness's `--drive`), once with
# no call and once with CALLS sequential calls on one session. The difference
# over CALLS is the client's cost per call: the connection, the handshake and
# the runtime's start-up cancel out of the totals (the function-by-function
# difference is of the CALLS runs alone, start-up included, divided by
# CALLS). Profiles and that difference go to target/callgrind/.
set -euo pipefail
calls="${1:-1000}"
server_side="${2:-upstream}"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ "$calls" =~ ^[1-9][0-9]*$ ]] || { echo "callgrind: CALLS must be a positive number" >&2; exit 2; }
fifo="$out/stdin.server"
rm -f "$fifo" "$out/url.server"
mkfifo "$fifo"
server=""
trap 'exec 3>&- 2>/dev/null; [[ -n "$server" ]] && wait "$server"; rm -f "$fifo"' EXIT
"$harness" --serve "$server_side" <"$fifo" >"$out/url.server" 2>"$out/server.log" &
server=$!
exec 3>"$fifo" # the server serves until its stdin closes
for _ in $(seq 1 100); do [[ -s "$out/url.server" ]] && break; sleep 0.1; done
[[ -s "$out/url.server" ]] || { echo "callgrind: the server did not start (see $out/server.log)" >&2; exit 1; }
url="$(cat "$out/url.server")"

declare -A per_call
for side in fork upstream; do
  for n in 0 "$calls"; do
    valgrind --tool=callgrind --callgrind-out-file="$out/client.$side.$n.out" \
      "$harness" --drive "$side" "$url" "$n" 2>"$out/client.$side.$n.log"
  done
  base=$(total "$out/client.$side.0.log")
  full=$(total "$out/client.$side.$calls.log")
  [[ -n "$base" && -n "$full" ]] || { echo "callgrind: no total in $out/client.$side.*.log" >&2; exit 1; }
  per_call[$side]=$(( (full - base) / calls ))
  echo "$side client: ${per_call[$side]} instructions per call (server: $server_side)"
done
python3 -c "print(f'fork / upstream: {${per_call[fork]} / ${per_call[upstream]}:.3f}')"
python3 "$here/diff.py" "$out/client.fork.$calls.out" "$out/client.upstream.$calls.out" "$calls" \
  | tee "$out/client-diff.txt"
