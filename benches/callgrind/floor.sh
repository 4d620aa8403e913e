#!/usr/bin/env bash
# Instructions per call of the protocol's floor (benches/harness/floor.rs:
# a POST answered by a one-event SSE stream, no rmcp), server and client,
# counted by callgrind as run.sh and client.sh count upstream's and the
# fork's, so the three can be set side by side.
#
#   bash benches/callgrind/floor.sh [CALLS]
#
# The server: the floor's `--serve floor` under callgrind, driven by
# drive.py (its `initialize` is answered 404; the calls name the floor's
# session). The client: the floor's `--drive floor` under callgrind against
# the floor's server outside it (one call in both runs, so the connection
# cancels out). Each is the difference between CALLS calls and none, over
# CALLS. Profiles go to target/callgrind/floor.*.
set -euo pipefail
calls="${1:-1000}"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

for n in 0 "$calls"; do
  fifo="$out/stdin.floor.$n"
  rm -f "$fifo" "$out/url.floor.$n"
  mkfifo "$fifo"
  valgrind --tool=callgrind --callgrind-out-file="$out/floor.server.$n.out" "$harness" --serve floor \
    <"$fifo" >"$out/url.floor.$n" 2>"$out/floor.server.$n.log" &
  server=$!
  exec 3>"$fifo"
  for _ in $(seq 1 600); do [[ -s "$out/url.floor.$n" ]] && break; sleep 0.2; done
  python3 "$here/drive.py" "$(cat "$out/url.floor.$n")" "$n" floor
  exec 3>&-
  wait "$server"
  rm -f "$fifo"
done
base=$(total "$out/floor.server.0.log")
full=$(total "$out/floor.server.$calls.log")
echo "floor server: $(( (full - base) / calls )) instructions per call"

fifo="$out/stdin.floor.server"
rm -f "$fifo" "$out/url.floor.server"
mkfifo "$fifo"
"$harness" --serve floor <"$fifo" >"$out/url.floor.server" 2>/dev/null &
server=$!
exec 3>"$fifo"
for _ in $(seq 1 100); do [[ -s "$out/url.floor.server" ]] && break; sleep 0.1; done
url="$(cat "$out/url.floor.server")"
for n in 0 "$calls"; do
  valgrind --tool=callgrind --callgrind-out-file="$out/floor.client.$n.out" \
    "$harness" --drive floor "$url" "$n" 2>"$out/floor.client.$n.log"
done
exec 3>&-
wait "$server"
rm -f "$fifo"
base=$(total "$out/floor.client.0.log")
full=$(total "$out/floor.client.$calls.log")
echo "floor client: $(( (full - base) / calls )) instructions per call"
