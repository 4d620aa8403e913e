#!/usr/bin/env python3
"""redis-server's CPU per quick commit: REV's scripts against the working tree's.

    python3 benches/redis/commit_ab.py [REV]   (from the repository's root; REV: 26277c2)

Four interleaved rounds; each starts a redis-server on core 1 (taskset), loads
one side's script and commits 20,000 quick calls in pipelines of 100, as the
group committer sends them, and prints Redis's CPU (INFO cpu, user + sys) per
commit and `usec_per_call` of EVALSHA. A side with `quick.lua` sends a quick
call in its revision's convention (178c7d8: keys, epoch, expiry, events for a
hash; c2b200d on: the stream packed as one string); one without sends
`commit.lua` its full argument list. Also prints Redis's `used_memory` per call
at the end (20,000 calls kept). REDIS_ARGS (say
`--hash-max-listpack-value 1024`) go to both sides' redis-server.
"""
import os, subprocess, sys, tempfile, time
sys.path.insert(0, "benches/redis")
from commit_cost import Redis, encode, ANSWER

LUA = "crates/rmcp-resume-redis/src/lua/"
REV = sys.argv[1] if len(sys.argv) > 1 else "26277c2"


def at(rev, name):
    out = subprocess.run(["git", "show", f"{rev}:{LUA}{name}"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def script(side):
    if side == "old":
        return at(REV, "quick.lua"), at(REV, "commit.lua")
    read = lambda name: open(LUA + name).read() if os.path.exists(LUA + name) else None
    return read("quick.lua"), read("commit.lua")


EPOCH = "1765000000000000"


def command(sha, quick, c):
    """One quick call's commit, in the calling convention of `quick` (the
    side's quick.lua, or None for commit.lua's quick path)."""
    answer = ANSWER % c
    if quick and "KEYS[4]" in quick:
        # c2b200d on: the stream packed as one string by the instance.
        packed = f"{EPOCH}\n2\n{64 + len(answer)}\n0\n{len(answer)}\n{answer}"
        return encode("EVALSHA", sha, "4", "b:{s}:epoch", "b:{s}:gone", f"b:{{s}}:m:{c}", f"b:{{s}}:p:{c}",
                      EPOCH, "60000", packed)
    if quick:
        # 178c7d8: a hash, its events sent with their indexes.
        return encode("EVALSHA", sha, "3", "b:{s}:epoch", "b:{s}:gone", f"b:{{s}}:m:{c}", EPOCH, "60000",
                      "2", str(64 + len(answer)), "0", "", "1", answer)
    return encode("EVALSHA", sha, "1", "b:{s}:epoch", "b:{s}:", EPOCH, "1765000000000", "64", "4096",
                  "300000", "4194304", "3600000", "60000",
                  "a", str(c), "0", "", "o", str(c), str(c), "", "a", str(c), "1", answer, "f", str(c), "", "")


N, P = 20000, 100


def once(side):
    quick, commit = script(side)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.sock")
        p = subprocess.Popen(["taskset", "-c", "1", "/usr/bin/redis-server", "--port", "0", "--unixsocket", path,
                              "--save", ""] + os.environ.get("REDIS_ARGS", "").split(), stdout=subprocess.DEVNULL)
        while not os.path.exists(path):
            time.sleep(0.02)
        r = Redis(path)
        sha = r.call("SCRIPT", "LOAD", quick or commit).decode()
        r.call("SET", "b:{s}:epoch", EPOCH)
        cpu = lambda: sum(float(r.info("cpu")[k]) for k in ("used_cpu_user", "used_cpu_sys"))
        c0 = cpu()
        m0 = int(r.info("memory")["used_memory"])
        r.call("CONFIG", "RESETSTAT")
        for start in range(0, N, P):
            batch = [command(sha, quick, c) for c in range(start, start + P)]
            r.sock.sendall(b"".join(batch))
            for _ in batch:
                reply = r.reply()
                if reply[0] != b"0":
                    raise SystemExit(f"{side}: refused {reply}")
        usec = float(dict(kv.split("=") for kv in r.info("commandstats")["cmdstat_evalsha"].split(","))["usec_per_call"])
        c1 = cpu()
        memory = int(r.info("memory")["used_memory"]) - m0
        p.terminate()
        p.wait()
        return (c1 - c0) / N * 1e6, usec, memory


res = {"old": [], "new": []}
for _ in range(4):
    for side in ("old", "new"):
        res[side].append(once(side))
for side, v in res.items():
    print(side, "redis CPU us/commit:", [round(a, 2) for a, _, _ in v], "usec_per_call:",
          [round(b, 2) for _, b, _ in v], "used_memory per call (B):", [round(m / N) for _, _, m in v])
