"""A minimal MCP server written against the wire protocol (no SDK: it starts in milliseconds),
that misbehaves on request: ``python fault_server.py FAULT`` where FAULT is one of

- ``none``: behaves; ``crash``: exits when ``work`` is called; ``hang``: never answers ``work``;
- ``flood``: ``work`` returns 10 MB of text; ``garbage``: ``work`` is answered with non-JSON lines;
- ``bad_schema``: lists a tool whose inputSchema is not a schema; ``exit_at_start``: dies at once;
  ``exit_from_start N FILE``: the N-th start (counted in FILE) and every later one die.

Tools: ``work(n: integer)`` adds n to a counter (a negative n is a JSON-RPC error answer); ``dump`` returns {"counter": ...}. No reset tool,
so every episode gets a new process.
"""

import json
import sys
import time

FAULT = sys.argv[1] if len(sys.argv) > 1 else "none"
counter = 0
TOOLS = [
    {"name": "work", "description": "Add n to the counter.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                     "additionalProperties": False}},
    {"name": "dump", "description": "The state.", "inputSchema": {"type": "object", "properties": {}},
     "annotations": {"readOnlyHint": True}},
]
if FAULT == "bad_schema":
    TOOLS[0]["inputSchema"] = {"type": "object", "properties": {"n": {"type": 17}}}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value, error=False):
    return {"content": [{"type": "text", "text": value if isinstance(value, str) else json.dumps(value)}],
            "isError": error}


def handle(msg):
    global counter
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "faulty", "version": "0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "dump":
            return text({"counter": counter})
        if name == "work":
            if FAULT == "crash":
                sys.exit(3)
            if FAULT == "hang":
                time.sleep(3600)
            if FAULT == "flood":
                return text("x" * 10_000_000)
            if FAULT == "garbage":
                for _ in range(3):
                    sys.stdout.write("this is not JSON-RPC\n")
                sys.stdout.flush()
                return None
            if args["n"] < 0:  # a JSON-RPC error answer (the server refuses; it stays up)
                return {"__error__": {"code": -32602, "message": "n must not be negative"}}
            counter += args["n"]
            return text({"counter": counter})
        return text(f"unknown tool {name}", error=True)
    if mid is not None:
        return {}
    return None


def main():
    if FAULT == "exit_from_start":  # argv: exit_from_start N COUNTER_FILE: the N-th start and later die
        n, path = int(sys.argv[2]), sys.argv[3]
        with open(path, "a+") as f:
            f.write("x")
            f.seek(0)
            starts = len(f.read())
        if starts >= n:
            sys.exit(1)
    if FAULT == "exit_at_start":
        sys.stderr.write("cannot start: no config\n")
        sys.exit(1)
    for line in sys.stdin:
        msg = json.loads(line)
        result = handle(msg)
        if msg.get("id") is not None and isinstance(result, dict) and "__error__" in result:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": result["__error__"]})
        elif msg.get("id") is not None and result is not None:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": result})


if __name__ == "__main__":
    main()
