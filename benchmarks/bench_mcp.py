"""What an MCP server costs: per-call overhead against the same tool as a native backend method,
and episodes per second with a fresh server per episode (issue 29).

    python benchmarks/bench_mcp.py [--calls 500] [--passes 2]

1. Per call: ``execute`` of ``get_ticket`` (validation included) on a native ``Backend`` subclass
   holding the example's tickets, against ``MCPBackend.execute`` of the same tool on the example
   server (examples/mcp_tickets/server.py, stdio), and the bare client round trip beneath it.
   Medians over ``--calls`` calls after 20 warm-up calls.
2. Episodes: the oracle over the example's 16 train tasks, ``--passes`` times, with a new server
   process per episode (``reset_tool=False``) and with the task file's reset tool (one process),
   and on a wire-level server without the SDK (tests/mcp/fault_server.py, a new process per
   episode) to separate the SDK's start-up from the protocol's. The first pass also replays each
   task's reference plan on a server of its own (cached after); later passes show the steady state.
   The native bank domain's oracle episodes are the yardstick.

Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import gymnasium as gym  # noqa: E402

import seal_envs  # noqa: E402,F401
from seal_envs.agents import OracleAgent, run_episode  # noqa: E402
from seal_envs.core.backend import Backend, ToolError, tool  # noqa: E402
from seal_envs.core.types import ToolCall  # noqa: E402

EXAMPLE = REPO / "examples" / "mcp_tickets"
SERVER = [sys.executable, str(EXAMPLE / "server.py")]
TASKS = str(EXAMPLE / "tasks.jsonl")
FAST = [sys.executable, str(REPO / "tests" / "mcp" / "fault_server.py"), "none"]
FAST_TASKS = str(REPO / "tests" / "mcp" / "faulty_tasks.jsonl")


class NativeTickets(Backend):
    """The example server's ``get_ticket`` as a native tool (same state, same result)."""

    domain = "tickets"

    @tool
    def get_ticket(self, ticket_id: str) -> dict:
        """One ticket with its comments.

        Args:
            ticket_id: the ticket's id
        """
        if ticket_id not in self.state["tickets"]:
            raise ToolError(f"ticket {ticket_id} not found", param="ticket_id")
        return {"id": ticket_id, **self.state["tickets"][ticket_id]}


def median_us(fn, n: int) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def per_call(n: int) -> list[tuple[str, float]]:
    sys.path.insert(0, str(EXAMPLE))
    import server as example  # the example's module: its INITIAL state, not its process

    native = NativeTickets(copy.deepcopy(example.INITIAL))
    call = ToolCall("get_ticket", {"ticket_id": "T-104"})
    rows = [("native Backend.execute", median_us(lambda: native.execute(call), n))]
    env = gym.make("seal/MCP-v0", server=SERVER, tasks=TASKS)
    try:
        env.reset(options={"index": 0})
        backend = env.unwrapped.backend
        assert backend.execute(call).result == native.execute(call).result
        rows.append(("MCPBackend.execute (stdio, example server)", median_us(lambda: backend.execute(call), n)))
        conn = backend.connection
        rows.append(("  of which the client round trip", median_us(
            lambda: conn.request("call_tool", "get_ticket", {"ticket_id": "T-104"}, timeout=10), n)))
    finally:
        env.close()
    return rows


def episodes(env_id: str, passes: int, **kwargs) -> tuple[float, list[float], int]:
    t = time.perf_counter()
    env = gym.make(env_id, **kwargs)
    made = time.perf_counter() - t
    source = env.unwrapped.task_set
    count = min(len(source), 16)
    rates = []
    try:
        for _ in range(passes):
            t = time.perf_counter()
            for index in range(count):
                reward, _, _ = run_episode(env, OracleAgent(), seed=index, options={"index": index})
                assert reward == 1.0
            rates.append(count / (time.perf_counter() - t))
        starts = getattr(getattr(source, "servers", None), "starts", 0)
    finally:
        env.close()
    return made, rates, starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    import importlib.metadata as md

    print(f"{date.today()}, {platform.node() or 'host'}: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"mcp {md.version('mcp')}\n")
    print("| call of get_ticket | median (us) |\n|---|---|")
    rows = per_call(args.calls)
    for name, us in rows:
        print(f"| {name} | {us:,.0f} |")
    print(f"\nMCP / native: {rows[1][1] / rows[0][1]:,.0f}x per call\n")
    print("| episodes (oracle) | make (s) | " + " | ".join(f"pass {i + 1} (ep/s)" for i in range(args.passes))
          + " | server starts |\n|---|---|" + "---|" * args.passes + "---|")
    cases = [("example server, new process per episode", "seal/MCP-v0", {"server": SERVER, "tasks": TASKS, "reset_tool": False}),
             ("example server, reset tool (one process)", "seal/MCP-v0", {"server": SERVER, "tasks": TASKS}),
             ("wire-level server without the SDK, new process per episode", "seal/MCP-v0", {"server": FAST, "tasks": FAST_TASKS}),
             ("native bank domain (yardstick)", "seal/ToolUse-Bank-v0", {})]
    for name, env_id, kwargs in cases:
        made, rates, starts = episodes(env_id, args.passes, **kwargs)
        print(f"| {name} | {made:.2f} | " + " | ".join(f"{r:,.1f}" for r in rates) + f" | {starts or '-'} |")


if __name__ == "__main__":
    main()
