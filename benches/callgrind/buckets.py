#!/usr/bin/env python3
"""Instructions per call by where they go, from callgrind profiles.

    buckets.py CALLS NAME=BASE.out,FULL.out [NAME=BASE.out,FULL.out ...]

Each pair is one process's profile with no call (BASE) and with CALLS calls
(FULL), as run.sh, client.sh, floor.sh and shared_log.sh leave them. Every
function's own (exclusive) instructions, from `callgrind_annotate`, go to
the first bucket whose pattern its name matches; the buckets partition the
process's instructions, so they add up to its total per call. Prints one
column per process: (FULL - BASE) / CALLS per bucket.
"""
import os
import re
import subprocess
import sys

ROW = re.compile(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)")

# First match wins; the order matters (a serde impl of an rmcp type is
# serialisation, not rmcp's own code).
BUCKETS = [
    ("allocation (malloc, free, realloc)", r"\b(_?_?libc_)?(malloc|free|realloc|calloc|cfree)\b|_int_(malloc|free|realloc)|malloc_consolidate|unlink_chunk|tcache|__rust_(alloc|dealloc|realloc)|__rdl_|alloc::raw_vec::finish_grow|RawVecInner.*(reserve|grow)|alloc::alloc::"),
    ("memcpy, memmove, memset, memchr", r"__mem(cpy|move|set|cmp|chr)|\bmem(cpy|move|set|cmp|chr|rchr)|__strlen|strlen|wmemset|core::slice::memchr|bcmp"),
    ("the Redis log's client (rmcp_resume_redis, redis-rs, RESP)", r"rmcp_resume_redis|\bredis::|combine::|sha1_smol"),
    ("serde_json, serde (JSON read and written)", r"serde_json|\bserde::|serde_core|<serde|Serialize|Deserialize|Visitor|__Field|itoa|ryu"),
    ("rmcp: service (dispatch, peer, handler, model)", r"rmcp::(service|handler|model)|rmcp_macros|\brmcp::.*(Peer|RequestContext|ServerHandler|ClientHandler)"),
    ("rmcp: transport (session, worker, SSE, HTTP glue)", r"\brmcp::|rmcp_resume|rmcp_resume_core|sse_stream|harness::|testkit|floor::"),
    ("hyper, http, httparse, h1", r"\bhyper|\bhttp::|httparse|http_body|\bh2::|want::|try_lock"),
    ("axum, tower, reqwest, url", r"\baxum|\btower|\breqwest|\burl::|matchit|form_urlencoded|idna|percent_encoding|mime"),
    ("tokio: scheduler, I/O driver, timers", r"tokio::(runtime|io|net|time|task)|mio::|parking_lot|tokio::loom|tokio::util|tokio::park"),
    ("tokio sync, futures (channels, wakers, select)", r"tokio::sync|tokio_util|tokio_stream|futures|async_stream|event_listener|crossbeam|Waker|wake"),
    ("tracing", r"tracing"),
    ("bytes, std, core, alloc (other)", r"\bbytes::|\bcore::|\bstd::|\balloc::|hashbrown|<&|<\[|<str|<u8|<usize|<i64|<u64|<char|uuid|rand|getrandom|sha|foldhash|siphash|SipHasher|ahash"),
    ("libc and kernel entry (syscall wrappers, locks)", r"pthread|epoll|__GI_|syscall|__libc|writev|recv|send|clock_gettime|__vdso|futex|_dl_|sched_yield|__lll|read$|write$|\?\?\?$|0x0"),
]


def profile(path):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    costs, total = {}, 0
    for line in text.splitlines():
        m = ROW.match(line)
        if not m or "PROGRAM TOTALS" in m.group(2):
            continue
        name = re.sub(r"::h[0-9a-f]{16}", "", m.group(2))
        name = re.sub(r" \[[^\]]*\]$", "", name)
        costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    m = re.search(r"^([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text, re.M)
    if m:
        total = int(m.group(1).replace(",", ""))
    return costs, total


def bucket(name):
    for label, pattern in BUCKETS:
        if re.search(pattern, name):
            return label
    return "other"


def main():
    calls = int(sys.argv[1])
    columns = []
    for arg in sys.argv[2:]:
        label, pair = arg.split("=", 1)
        base, full = pair.split(",")
        (b, bt), (f, ft) = profile(base), profile(full)
        per = {"_names": {}}
        for name in set(b) | set(f):
            k = bucket(name)
            cost = (f.get(name, 0) - b.get(name, 0)) / calls
            per[k] = per.get(k, 0) + cost
            if os.environ.get("SHOW") and os.environ["SHOW"] in k:
                per["_names"][name] = cost
        per["total"] = (ft - bt) / calls
        columns.append((label, per))
    labels = [l for l, _ in BUCKETS] + ["other", "total"]
    print("| Instructions per call | " + " | ".join(l for l, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for k in labels:
        print(f"| {k} | " + " | ".join(f"{c.get(k, 0) / 1000:.1f} k" for _, c in columns) + " |")
    show = os.environ.get("SHOW")
    if show:
        # The largest functions of the buckets whose label contains SHOW.
        for label, per in columns:
            print(f"\n{label}: largest in buckets matching {show!r}")
            for name, cost in sorted(per["_names"].items(), key=lambda r: -abs(r[1]))[:25]:
                if show in bucket(name):
                    print(f"  {cost / 1000:8.2f} k  {name[:150]}")


if __name__ == "__main__":
    main()
