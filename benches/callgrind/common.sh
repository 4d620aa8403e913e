# Sourced by run.sh and client.sh: the paths, valgrind's presence, the
# release harness (built if needed) and a profile's instruction total.
# Sets repo, here, out and harness; defines total LOG.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$repo/benches/callgrind"
out="$repo/target/callgrind"
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "callgrind: valgrind is not installed (Debian: valgrind)" >&2; exit 2; }

harness=$(cd "$repo" && cargo bench -j2 --bench harness --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "harness" and m.get("executable"):
        print(m["executable"])')
[[ -x "$harness" ]] || { echo "callgrind: could not build the harness bench" >&2; exit 1; }

# The instructions callgrind counted, from its log.
total() { sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$1"; }
