"""Which arguments does an agent get wrong? Failing episodes of a ``seal eval`` run, each reference
call compared with the agent's calls to the same tool.

    seal eval seal/ToolUse-Bank-v0 --agent hf:default --split test --limit 200 --temperature 0 \\
        --max-steps 12 --max-new-tokens 64 --batch-size 50 --out runs/eval-default
    python -m benchmarks.failures runs/eval-default/eval.json

For every failing episode, every call of the task's reference plan is looked for among the calls
the agent made (its transcript): found as is, made with other values (the closest call to the same
tool names the arguments that differ, and what the agent wrote), or never made. The table counts
failing episodes per (tool, argument); it is what a diagnosis hands to whoever chooses the RL
tasks (``seal train --rl-tools``) or the surface's hints. Episodes are regenerated from their task
ids, so only generated tasks are read (not BFCL's).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterable


def agent_calls(transcript: Iterable[dict]) -> list[tuple[str, dict]]:
    """(tool, arguments) of every call in an OpenAI-style transcript, in order."""
    calls = []
    for message in transcript:
        for call in message.get("tool_calls") or []:
            fn = call["function"]
            args = fn.get("arguments") or {}
            calls.append((fn["name"], json.loads(args) if isinstance(args, str) else dict(args)))
    return calls


def differences(plan: Iterable[Any], made: list[tuple[str, dict]]) -> list[tuple[str, str, Any]]:
    """``(tool, argument, what the agent wrote)`` for every reference call not made as is:
    against the agent's closest call to the same tool (fewest differing arguments);
    ``(tool, "(never called)", None)`` when it made none."""
    out = []
    for call in plan:
        want = dict(call.arguments)
        same_tool = [args for name, args in made if name == call.name]
        if want in same_tool:
            continue
        if not same_tool:
            out.append((call.name, "(never called)", None))
            continue
        closest = min(same_tool, key=lambda a: sum(a.get(k) != v for k, v in want.items()) + len(set(a) - set(want)))
        out += [(call.name, k, closest.get(k)) for k, v in want.items() if closest.get(k) != v]
    return out


def tally(episodes: Iterable[dict]) -> tuple[int, Counter, dict[tuple[str, str], Counter]]:
    """Failing episodes, the count of failing episodes per (tool, argument), and per (tool,
    argument) what the agent wrote."""
    from seal_envs.tasks import task_from_id

    failing, per_arg, written = 0, Counter(), {}
    for ep in episodes:
        if ep["passed"]:
            continue
        failing += 1
        task = task_from_id(ep["task_id"])
        plan = [c for turn in task.turns for c in turn.plan]
        seen = set()
        for tool, arg, value in differences(plan, agent_calls(ep["transcript"])):
            if (tool, arg) not in seen:
                seen.add((tool, arg))
                per_arg[(tool, arg)] += 1
            written.setdefault((tool, arg), Counter())[json.dumps(value)] += 1
    return failing, per_arg, written


def markdown(failing: int, per_arg: Counter, written: dict, by: str = "") -> str:
    lines = [f"Failing episodes{by}: {failing}", "",
             "| tool | argument | failing episodes | what the agent wrote (most common) |", "| --- | --- | ---: | --- |"]
    for (tool, arg), n in per_arg.most_common():
        common = ", ".join(f"{v} ({c})" for v, c in written[(tool, arg)].most_common(3))
        lines.append(f"| {tool} | {arg} | {n} | {common} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("eval_json", type=Path, help="eval.json of `seal eval --out`")
    p.add_argument("--difficulties", default="", help="only these difficulties, e.g. 2,3 (default: all)")
    args = p.parse_args(argv)
    try:
        episodes = json.loads(args.eval_json.read_text())["episodes"]
    except (OSError, ValueError, KeyError) as err:
        p.error(f"{args.eval_json}: not an eval.json with episodes ({err})")
    keep = {int(d) for d in args.difficulties.split(",") if d.strip()}
    if keep:
        episodes = [e for e in episodes if e["difficulty"] in keep]
    by = f" (difficulties {sorted(keep)})" if keep else ""
    print(markdown(*tally(episodes), by=by))


if __name__ == "__main__":
    main(sys.argv[1:])
