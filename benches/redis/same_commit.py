#!/usr/bin/env python3
"""Whether commit.lua stores and answers the same as at another revision.

    python3 benches/redis/same_commit.py [REV]

Runs the same batches (quick calls of 0 to 17 appends, at indexes and at
'*', non-canonical indexes, and fenced, lost and zero epochs) through the
working tree's commit.lua and REV's (default HEAD), each on a fresh
redis-server, and compares every reply and every key's contents and TTL's
presence. For a change meant to make the script cheaper, not different.
"""
import os, subprocess, sys, tempfile, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from commit_cost import Redis, ANSWER
PATH = "crates/rmcp-resume-redis/src/lua/commit.lua"
ROOT = os.path.join(HERE, "..", "..")
rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
old = subprocess.run(["git", "show", f"{rev}:{PATH}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
new = open(os.path.join(ROOT, PATH)).read()
def run(script, tmp):
    path = os.path.join(tmp, "r.sock")
    p = subprocess.Popen(["/usr/bin/redis-server", "--port", "0", "--unixsocket", path, "--save", ""], stdout=subprocess.DEVNULL)
    while not os.path.exists(path): time.sleep(0.05)
    r = Redis(path); sha = r.call("SCRIPT", "LOAD", script).decode()
    r.call("SET", "b:{s}:epoch", "1234567890123456")
    out = []
    cases = []
    for call in range(40):
        s = str(call); n = call % 18  # 0..17 appends: quick path up to 16, general beyond
        ops = []
        for k in range(n):
            if k == 1: ops += ["o", s, str(call), ""]
            ops += ["a", s, "*" if call % 5 == 0 else str(k), ("x" * k) + ANSWER % call]
        if n <= 1: ops += ["o", s, str(call), ""]
        ops += ["f", s, "", ""]
        cases.append(ops)
    cases.append(["a", "99", "00", "zero", "o", "99", "7", "", "a", "99", "01", "one", "f", "99", "", ""])  # non-canonical indexes
    for ep in ["1234567890123456", "1234567890123455", "1234567890123457", "01234567890123456", "0"]:
        cases.append(["EPOCH", ep, "a", "77", "0", "e", "o", "77", "1", "", "f", "77", "", ""])
    for ops in cases:
        ep = "1234567890123456"
        if ops[0] == "EPOCH": ep, ops = ops[1], ops[2:]
        rep = r.call("EVALSHA", sha, "1", "b:{s}:epoch", "b:{s}:", ep, "1000", "64", "4096", "300000", "4194304", "3600000", "60000", *ops)
        out.append(("reply", rep))
    for key in sorted(r.call("KEYS", "*")):
        t = r.call("TYPE", key)
        if t == b"hash": out.append((key, sorted(zip(*[iter(r.call("HGETALL", key))]*2)), r.call("PTTL", key) != b"-1"))
        elif t == b"stream": out.append((key, r.call("XRANGE", key, "-", "+"), r.call("PTTL", key) != b"-1"))
        else: out.append((key, r.call("GET", key)))
    p.terminate(); p.wait()
    return out
with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
    o, n = run(old, a), run(new, b)
print(f"{'same' if o == n else 'DIFFERENT'}: {len(o)} replies and keys compared against {rev}")
if o != n:
    for x, y in zip(o, n):
        if x != y:
            print(x, "\n", y)
            break
    sys.exit(1)
