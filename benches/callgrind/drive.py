#!/usr/bin/env python3
"""Makes N sequential `tools/call sum` on one session of an MCP server.

    drive.py URL N [SESSION]

The same plain HTTP client for both servers, so that what callgrind counts
in a server is the server's own work.
"""
import http.client
import json
import sys
import urllib.parse

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def main():
    url = urllib.parse.urlparse(sys.argv[1])
    calls = int(sys.argv[2])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)

    def post(body, session=None):
        headers = dict(HEADERS)
        if session:
            headers["Mcp-Session-Id"] = session
        conn.request("POST", url.path, json.dumps(body), headers)
        response = conn.getresponse()
        return response, response.read()

    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "drive", "version": "0"}}
    response, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
    # The floor's server (`--serve floor`) has no handshake: it answers 404
    # and expects its one session id, which a third argument names.
    session = response.getheader("Mcp-Session-Id") or (sys.argv[3] if len(sys.argv) > 3 else None)
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    for i in range(calls):
        call = {"name": "sum", "arguments": {"a": i, "b": 1}}
        _, body = post({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": call}, session)
        if b'"result"' not in body:
            sys.exit(f"drive: call {i + 1} was not answered: {body[:300]!r}")


if __name__ == "__main__":
    main()
