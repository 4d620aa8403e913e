#!/usr/bin/env python3
"""redis-server's CPU per quick commit, commit.lua at 26277c2 against the working tree.

    python3 benches/redis/commit_ab.py   (from the repository's root)

Four interleaved rounds; each starts a redis-server on core 1 (taskset), loads
one script and commits 20,000 quick calls in pipelines of 100, as the group
committer sends them, and prints Redis's CPU (INFO cpu, user + sys) per commit
and `usec_per_call` of EVALSHA.
"""
import os, subprocess, sys, tempfile, time
sys.path.insert(0, "benches/redis")
from commit_cost import Redis, encode, ANSWER
scripts = {"old": subprocess.run(["git","show","26277c2:crates/rmcp-resume-redis/src/lua/commit.lua"],capture_output=True,text=True).stdout,
           "new": open("crates/rmcp-resume-redis/src/lua/commit.lua").read()}
N, P = 20000, 100
def once(name):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.sock")
        p = subprocess.Popen(["taskset","-c","1","/usr/bin/redis-server","--port","0","--unixsocket",path,"--save",""], stdout=subprocess.DEVNULL)
        while not os.path.exists(path): time.sleep(0.02)
        r = Redis(path); sha = r.call("SCRIPT","LOAD",scripts[name]).decode(); r.call("SET","b:{s}:epoch","1765000000000000")
        cpu = lambda: sum(float(r.info("cpu")[k]) for k in ("used_cpu_user","used_cpu_sys"))
        c0 = cpu(); r.call("CONFIG","RESETSTAT")
        for start in range(0, N, P):
            batch = [encode("EVALSHA", sha, "1", "b:{s}:epoch", "b:{s}:", "1765000000000000", "1765000000000", "64", "4096", "300000", "4194304", "3600000", "60000",
                "a", str(c), "0", "", "o", str(c), str(c), "", "a", str(c), "1", ANSWER % c, "f", str(c), "", "") for c in range(start, start+P)]
            r.sock.sendall(b"".join(batch))
            for _ in batch: r.reply()
        usec = float(dict(kv.split("=") for kv in r.info("commandstats")["cmdstat_evalsha"].split(","))["usec_per_call"])
        c1 = cpu(); p.terminate(); p.wait()
        return (c1 - c0) / N * 1e6, usec
res = {"old": [], "new": []}
for _ in range(4):
    for name in ("old", "new"):
        res[name].append(once(name))
for name, v in res.items():
    print(name, "redis CPU us/commit:", [round(a,2) for a,_ in v], "usec_per_call:", [round(b,2) for _,b in v])
