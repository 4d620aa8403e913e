#!/usr/bin/env python3
"""Redis's own cost of committing quick calls, script by script.

    python3 benches/redis/commit_cost.py [CALLS] [SCRIPT [--no-answered-ttl]]

Starts a redis-server on a temporary Unix socket, loads SCRIPT (default:
the shared log's commit.lua), and commits CALLS quick calls (a priming
event, the call's opening, an answer and the stream's finish, in one batch
and in the order the server sends them, one call per new request stream)
in pipelines of 100, as the server's group committer sends them. Prints, per tenth of the calls, Redis's time per EVALSHA
(`INFO commandstats`) and its memory per call (`used_memory`): both grow
with the keyspace, which is why the figure is given at several sizes.
`--no-answered-ttl` sends the argument list of the scripts before
`answered_ttl` (one argument fewer), for comparing with an older commit.lua
(`git show 3386665:crates/rmcp-resume-redis/src/lua/commit.lua`).
No Python packages needed: it speaks RESP itself.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COMMIT = os.path.join(HERE, "..", "..", "crates", "rmcp-resume-redis", "src", "lua", "commit.lua")
ANSWER = '{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"42"}],"isError":false}}'
PIPELINE = 100


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        arg = arg.encode() if isinstance(arg, str) else arg
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


class Redis:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")

    def reply(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:].strip()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind in (b"+", b":"):
            return rest
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self.file.read(size + 2)[:-2]
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return self.reply()

    def info(self, section):
        text = self.call("INFO", section).decode()
        return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def main():
    args = [arg for arg in sys.argv[1:] if arg != "--no-answered-ttl"]
    answered_ttl = [] if "--no-answered-ttl" in sys.argv else ["60000"]
    calls = int(args[0]) if args else 200_000
    script = open(args[1] if len(args) > 1 else COMMIT).read()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "redis.sock")
        server = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", path, "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        try:
            deadline = time.time() + 10
            while not os.path.exists(path):
                if time.time() > deadline:
                    sys.exit("commit_cost: redis-server did not start")
                time.sleep(0.05)
            run(Redis(path), script, calls, answered_ttl)
        finally:
            server.terminate()
            server.wait(timeout=10)


def run(redis, script, calls, answered_ttl):
    sha = redis.call("SCRIPT", "LOAD", script).decode()
    redis.call("SET", "b:{s}:epoch", "1")
    base = int(redis.info("memory")["used_memory"])
    step = max(PIPELINE, calls // 10 // PIPELINE * PIPELINE)
    print("calls     us per EVALSHA (this tenth)   bytes per call (all so far)")
    done = 0
    while done < calls:
        redis.call("CONFIG", "RESETSTAT")
        for start in range(done, min(done + step, calls), PIPELINE):
            batch = []
            for call in range(start, min(start + PIPELINE, calls)):
                stream = str(call)
                batch.append(encode(
                    "EVALSHA", sha, "1", "b:{s}:epoch", "b:{s}:", "1", str(int(time.time() * 1000)),
                    "64", "4096", "300000", "4194304", "3600000", *answered_ttl,
                    "a", stream, "0", "",
                    "o", stream, str(call), "",
                    "a", stream, "1", ANSWER % call,
                    "f", stream, "", ""))
            redis.sock.sendall(b"".join(batch))
            for _ in batch:
                reply = redis.reply()
                if not isinstance(reply, list) or reply[0] != b"0":
                    sys.exit(f"commit_cost: the script answered {reply!r}")
        stats = redis.info("commandstats")["cmdstat_evalsha"]
        per_call = dict(kv.split("=") for kv in stats.split(","))["usec_per_call"]
        done = min(done + step, calls)
        used = int(redis.info("memory")["used_memory"]) - base
        print(f"{done:>8}  {float(per_call):>10.1f}  {used / done:>30.0f}")


if __name__ == "__main__":
    main()
