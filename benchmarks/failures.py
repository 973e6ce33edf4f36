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

``--choice TOOL.ARG`` asks the model instead of a run: for every task of ``--split`` whose reference
plan calls TOOL, the conversation is played by the oracle up to that call, and the model scores
each value the argument's schema allows (its ``enum``) as the continuation of the call's text up
to the argument's value. It tells "picks the wrong value" from "does not know which":

    python -m benchmarks.failures --choice set_alert.channel --model default --split test
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
        seen = set()
        for tool, arg, value in differences(task_from_id(ep["task_id"]).plan, agent_calls(ep["transcript"])):
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


def choice_probabilities(model: Any, tokenizer: Any, env_id: str, split: str, limit: int, tool: str,
                         arg: str) -> list[dict]:
    """Per task calling ``tool``: the right value and the model's probability of each allowed
    value of ``arg`` (normalised over them), scored where the reference call writes it."""
    import gymnasium as gym
    import torch

    import seal_envs  # noqa: F401
    from seal_envs.agents import OracleAgent

    env = gym.make(env_id, split=split).unwrapped
    marker = f'"{arg}": "'
    rows = []
    for index in range(min(limit, len(env.task_set))):
        _, info = env.reset(options={"index": index})
        plan = [c for c in env.task.plan if c.name == tool]
        if not plan:
            continue
        values = env.specs[tool].parameters["properties"][arg].get("enum")
        if not values:
            raise ValueError(f"{tool}.{arg} has no enum of values to score")
        agent, done = OracleAgent(), False
        while not done:
            action = agent.act(env, info)
            if isinstance(action, str) and f'"name": "{tool}"' in action and marker in action:
                context = tokenizer.apply_chat_template(env.messages, tools=env.tools, tokenize=False,
                                                        add_generation_prompt=True)
                head = context + action[:action.index(marker) + len(marker)]
                prefix = tokenizer(head, add_special_tokens=False)["input_ids"]
                scores = []
                for value in values:
                    ids = tokenizer(head + str(value) + '"', add_special_tokens=False)["input_ids"]
                    if ids[:len(prefix)] != prefix:
                        raise ValueError("the value's tokens do not extend the context's: cannot score it")
                    with torch.no_grad():
                        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
                    scores.append(sum(logp[i - 1, ids[i]].item() for i in range(len(prefix), len(ids))))
                probs = torch.softmax(torch.tensor(scores), 0).tolist()
                rows.append({"task_id": env.task.task_id, "right": plan[0].arguments[arg],
                             "probabilities": dict(zip(map(str, values), probs))})
                break
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    return rows


def choice_markdown(rows: list[dict], tool: str, arg: str) -> str:
    if not rows:
        return f"No task calls {tool}.\n"
    values = list(rows[0]["probabilities"])
    lines = [f"{len(rows)} reference calls of {tool}; the model's probability of each {arg} (normalised over them)",
             "", "| right value | calls | " + " | ".join(f"p({v}) mean" for v in values) + " | p(right) min / mean / max |",
             "| --- | ---: | " + " | ".join("---:" for _ in values) + " | --- |"]
    for right in sorted({r["right"] for r in rows}):
        rs = [r for r in rows if r["right"] == right]
        means = [sum(r["probabilities"][v] for r in rs) / len(rs) for v in values]
        p_right = [r["probabilities"][str(right)] for r in rs]
        lines.append(f"| {right} | {len(rs)} | " + " | ".join(f"{m:.2f}" for m in means)
                     + f" | {min(p_right):.2f} / {sum(p_right) / len(p_right):.2f} / {max(p_right):.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("eval_json", type=Path, nargs="?", help="eval.json of `seal eval --out`")
    p.add_argument("--difficulties", default="", help="only these difficulties, e.g. 2,3 (default: all)")
    p.add_argument("--choice", default="", metavar="TOOL.ARG", help="score the values of an enum argument instead")
    p.add_argument("--model", default="default", help="with --choice: 'default' or a HF model id/path")
    p.add_argument("--env", default="seal/ToolUse-Bank-v0", help="with --choice (default %(default)s)")
    p.add_argument("--split", default="test", choices=["train", "test", "ood"])
    p.add_argument("--limit", type=int, default=200, help="with --choice: first N tasks of the split")
    args = p.parse_args(argv)
    if args.choice:
        tool, _, arg = args.choice.partition(".")
        if not arg:
            p.error("--choice is TOOL.ARG, e.g. set_alert.channel")
        from seal_trl.agent.tiny import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(args.model)
        model.eval()
        print(choice_markdown(choice_probabilities(model, tokenizer, args.env, args.split, args.limit, tool, arg),
                              tool, arg))
        return
    if args.eval_json is None:
        p.error("give an eval.json, or --choice TOOL.ARG")
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
