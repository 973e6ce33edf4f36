"""``seal``: the command line, a thin layer over library functions.

    seal envs [--json]                          registered ids, domains, splits and sizes
    seal show TASK_ID [--json]                  one task: user turns and reference plan
    seal play ENV [--seed N] [--split S]        play an episode yourself (actions from stdin)
    seal eval ENV --agent A --split S --k N     success rate, pass^k, per-domain/label tables
    seal report RUN_DIR                         plots and a Markdown summary of a training run

Heavy imports (torch, transformers, matplotlib) happen only inside the commands that need them,
so ``seal envs`` stays fast and never imports torch. Every command is documented in
``docs/cli.md``. Exit status: 0 on success, 1 when ``play`` runs out of input before the episode
ends, 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

SPLIT_CHOICES = ("train", "test", "ood")


class CLIError(Exception):
    """A problem with the user's input: printed as ``seal: error: ...``, exit status 2."""


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=1, ensure_ascii=False, default=str))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(cells[0]), line(["-" * w for w in widths])] + [line(r) for r in cells[1:]])


# -- seal envs -----------------------------------------------------------------------------
def env_catalog() -> list[dict[str, Any]]:
    """Every registered ``seal/`` id with its default split, domains and split sizes."""
    import gymnasium as gym

    import seal_envs  # noqa: F401  (registers the ids)
    from seal_envs.core.generator import SPLITS

    rows = []
    for env_id in seal_envs.registered_ids():
        spec = gym.spec(env_id)
        row: dict[str, Any] = {"id": env_id, "default_split": spec.kwargs.get("split", "train")}
        try:
            env = gym.make(env_id, disable_env_checker=True)
            ts = env.unwrapped.task_set
            row["domains"] = list(getattr(ts, "domains", ()))
            row["held_out_domains"] = list(getattr(ts, "held_out", ()))
            sizes = {}
            for split in SPLITS:
                try:
                    sizes[split] = len(ts.with_split(split))
                except (ValueError, KeyError, NotImplementedError):
                    sizes[split] = None
            row["splits"] = sizes
            env.close()
        except Exception as e:  # an optional source (BFCL) may be registered but unusable here
            row["error"] = f"{type(e).__name__}: {e}"
        rows.append(row)
    return rows


def cmd_envs(args: argparse.Namespace) -> int:
    rows = env_catalog()
    if args.json:
        _print_json(rows)
        return 0
    table = []
    for r in rows:
        if "error" in r:
            table.append([r["id"], r["default_split"], f"unavailable ({r['error']})", "", "", ""])
            continue
        domains = ", ".join(r["domains"]) + (f" (+ood: {', '.join(r['held_out_domains'])})"
                                             if r["held_out_domains"] else "")
        sizes = [r["splits"].get(s) for s in SPLIT_CHOICES]
        table.append([r["id"], r["default_split"], domains, *["-" if n is None else n for n in sizes]])
    print(_table(["id", "default split", "domains", *SPLIT_CHOICES], table))
    return 0


# -- seal show -----------------------------------------------------------------------------
def find_task(task_id: str, env_id: str | None = None):
    """A task by id: native ids (``domain/split/dN/seed``) directly, others (BFCL) through the
    task set of ``env_id`` or of any registered env that knows the id."""
    import gymnasium as gym

    import seal_envs  # noqa: F401  (registers the ids)

    if env_id is None:
        try:
            return seal_envs.task_from_id(task_id)
        except ValueError as native_error:
            candidates, error = [i for i in seal_envs.registered_ids() if "BFCL" in i], native_error
    else:
        candidates, error = [env_id], None
    errors = [str(error)] if error is not None else []
    for candidate in candidates:
        try:
            return gym.make(candidate, disable_env_checker=True).unwrapped.task_set.task_from_id(task_id)
        except (ValueError, KeyError) as e:
            errors.append(str(e).strip("'\""))
        except gym.error.Error as e:
            raise CLIError(str(e)) from None
    raise CLIError(f"unknown task id {task_id!r}. " + "; ".join(dict.fromkeys(errors)))


def _call_text(call) -> str:
    return f"{call.name}({json.dumps(dict(call.arguments), ensure_ascii=False)})"


def task_text(task, show_state: bool = False) -> str:
    lines = [f"task {task.task_id}", f"  domain: {task.domain}   split: {task.split}   "
             f"difficulty: {task.difficulty}   seed: {task.seed}"]
    if task.template:
        lines.append(f"  template: {task.template}")
    if task.hidden_tools:
        lines.append(f"  tools hidden at the start: {', '.join(task.hidden_tools)}")
    for i, turn in enumerate(task.turns):
        lines += ["", f"user turn {i}: {turn.message}"]
        if turn.new_tools:
            lines.append(f"  tools that appear now: {', '.join(turn.new_tools)}")
        if turn.withheld is not None:
            lines.append(f"  withheld: {turn.withheld.param} = {json.dumps(turn.withheld.value, ensure_ascii=False)}"
                         f" (user replies when asked: {turn.withheld.reply!r})")
        if turn.plan:
            lines.append("  reference plan:")
            lines += [f"    {j + 1}. {_call_text(c)}" for j, c in enumerate(turn.plan)]
        else:
            lines.append("  reference plan: no call (answer or decline)")
        if turn.required_outputs:
            lines.append(f"  the answer must contain: {', '.join(map(repr, turn.required_outputs))}")
    if show_state:
        lines += ["", "initial state:", json.dumps(task.to_dict()["initial_state"], indent=1, ensure_ascii=False)]
    return "\n".join(lines)


def cmd_show(args: argparse.Namespace) -> int:
    task = find_task(args.task_id, args.env)
    if args.json:
        _print_json(task.to_dict())
    else:
        print(task_text(task, args.state))
    return 0


# -- seal play -----------------------------------------------------------------------------
PLAY_HELP = """Type one action per line (end a line with \\ to continue it on the next):
  <tool_call>{"name": "...", "arguments": {...}}</tool_call>   call a tool (several blocks allowed)
  {"name": "...", "arguments": {...}}                         the same as plain JSON (or a JSON list)
  any other text                                              answer the user / ask a question (ends your turn)
  :tools   list the tools you can call now      :help   this text      :quit   stop"""


def _read_action(stream, interactive: bool) -> str | None:
    parts: list[str] = []
    while True:
        if interactive:
            print("you> " if not parts else "...> ", end="", flush=True)
        line = stream.readline()
        if not line:
            return None if not parts else "\n".join(parts)
        line = line.rstrip("\n")
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        return "\n".join(parts)


def _tools_text(tools: Sequence[dict]) -> str:
    lines = []
    for t in tools:
        fn = t["function"]
        params = fn.get("parameters", {})
        req = set(params.get("required", []))
        args = ", ".join(f"{p}{'' if p in req else '?'}: {s.get('type', 'any')}"
                         for p, s in params.get("properties", {}).items())
        lines.append(f"  {fn['name']}({args}): {fn.get('description', '')}")
    return "\n".join(lines)


def verdict_text(reward: float, info: dict, live_labels: Sequence[str] | None = None) -> str:
    """The verdict and the final label of every action. ``live_labels`` (what ``seal play``
    printed after each action) go in a column beside the final ones, with a note on every
    difference: the live label sees one action, the final diagnosis the whole episode."""
    from seal_envs.core.diagnosis import official_tag
    from seal_envs.core.types import TurnLabel

    v = info["verification"]
    lines = [f"verdict: {'PASS' if v['passed'] else 'FAIL'}   reward: {reward:g}   progress: {v['progress']:.2f}   "
             f"turns passed: {v['turns_passed']}", "checks:"]
    lines += [f"  [{'x' if c['passed'] else ' '}] {c['name']}" + (f": {c['detail']}" if c.get("detail") else "")
              for c in v["checks"]]
    rows, changed = [], []
    for i, d in enumerate(info["turn_labels"]):
        lb = TurnLabel.from_dict(d)
        row = [i, lb.turn, lb.label, official_tag(lb), lb.tool or "", lb.detail[:70]]
        if live_labels is not None:
            live = live_labels[i] if i < len(live_labels) else "?"
            row.insert(3, live if live == lb.label else f"{live} *")
            if live != lb.label:
                changed.append(i)
        rows.append(row)
    headers = ["action", "user turn", "label", "official tag", "tool", "detail"]
    if live_labels is not None:
        headers.insert(3, "label while playing")
    lines += ["turn labels (one per action):", _table(headers, rows)]
    if changed:
        lines.append(f"* {len(changed)} label(s) changed at the end: the label printed after an action sees only that "
                     "action and the ones before it; the final diagnosis aligns each user turn with its reference plan "
                     "and the verifier's checks, so it can name a fault that shows only then (docs/diagnosis.md).")
    return "\n".join(lines)


def cmd_play(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import seal_envs  # noqa: F401  (registers the ids)

    kwargs: dict[str, Any] = {}
    if args.split:
        kwargs["split"] = args.split
    if args.max_steps:
        kwargs["max_steps"] = args.max_steps
    env = gym.make(args.env, **kwargs)
    options: dict[str, Any] = {}
    if args.task_id:
        options["task_id"] = args.task_id
    if args.index is not None:
        options["index"] = args.index
    if args.domain:
        options["domain"] = args.domain
    obs, info = env.reset(seed=args.seed, options=options or None)
    interactive = sys.stdin.isatty()
    print(f"== {info['task_id']} ({info['domain']}, difficulty {info['difficulty']}); "
          f"type :help for how to act ==")
    print(obs)
    live_labels: list[str] = []
    while True:
        action = _read_action(sys.stdin, interactive)
        if action is None:
            print("\n(input ended before the episode did)")
            return 1
        command = action.strip()
        if command in (":q", ":quit", ":exit"):
            print("(stopped)")
            return 1
        if command == ":help":
            print(PLAY_HELP)
            continue
        if command == ":tools":
            print(_tools_text(info["tools"]))
            continue
        obs, reward, terminated, truncated, info = env.step(action)
        label = info["turn_label"]["label"] if info.get("turn_label") else "?"
        live_labels.append(label)
        if obs:
            print(obs)
        print(f"(step {len(env.unwrapped.steps)}, user turn {info['turn_index']}, label so far: {label})")
        if terminated or truncated:
            print(f"== episode {'ended' if terminated else 'cut at the step budget'} ==")
            print(verdict_text(reward, info, live_labels))
            return 0


# -- seal eval -----------------------------------------------------------------------------
def cmd_eval(args: argparse.Namespace) -> int:
    import seal_envs  # noqa: F401
    from seal_envs.eval import evaluate
    from seal_trl.agents import make_agent

    options = {"temperature": args.temperature, "top_p": args.top_p, "max_new_tokens": args.max_new_tokens,
               "max_tokens": args.max_new_tokens, "device": args.device, "dtype": args.dtype}
    try:
        agent = make_agent(args.agent, **options)
    except ValueError as e:
        raise CLIError(str(e)) from None
    env_kwargs = {"max_steps": args.max_steps} if args.max_steps else {}

    def progress(done: int, total: int) -> None:
        if not args.quiet:
            print(f"\r[seal eval] {done}/{total} episodes", end="" if done < total else "\n",
                  file=sys.stderr, flush=True)

    result = evaluate(args.env, agent, split=args.split, k=args.k, n=args.n, limit=args.limit, seed=args.seed,
                      batch_size=args.batch_size, env_kwargs=env_kwargs, agent_name=args.agent, progress=progress)
    if args.out:
        paths = result.save(args.out)
        if not args.quiet:
            print(f"[seal eval] wrote {paths['json']} and {paths['markdown']}", file=sys.stderr)
    if args.json:
        _print_json(result.summary() | {"per_domain": result.per_domain(), "per_label": result.per_label()})
    else:
        print(result.to_markdown(), end="")
    failed = [e for e in result.episodes if e.get("agent_error")]
    if failed:  # the played episodes are kept (above); the agent's failures still fail the command
        print(f"seal: error: the agent failed in {len(failed)} of {len(result.episodes)} episodes, first: "
              f"{failed[0]['agent_error']}", file=sys.stderr)
        return 2
    return 0


# -- seal report ---------------------------------------------------------------------------
def cmd_report(args: argparse.Namespace) -> int:
    from seal_envs.report import write_report

    try:
        out = write_report(args.run_dir, args.out)
    except (FileNotFoundError, ValueError) as e:
        raise CLIError(str(e)) from None
    print(out["markdown"], end="")
    print(f"[seal report] wrote {', '.join(sorted(out['files'].values()))}", file=sys.stderr)
    return 0


# -- parser --------------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    from seal_trl.train import run

    out = run(args)
    print(f"run folder: {out}  (seal report {out})")
    return 0


def cmd_warmstart(args: argparse.Namespace) -> int:
    import dataclasses

    import torch

    from seal_trl.checkpoint import DEFAULT_WARMSTART, make_default_checkpoint

    out = Path(args.out)
    if out.exists() and any(p.name != ".gitkeep" for p in out.iterdir()) and not args.overwrite:
        raise CLIError(f"{out} is not empty; pass --overwrite to replace the checkpoint in it")
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    cfg = DEFAULT_WARMSTART if args.steps is None else dataclasses.replace(DEFAULT_WARMSTART, max_steps=args.steps)
    if args.init:
        cfg = dataclasses.replace(cfg, init_from=str(Path(args.init).resolve()))
    command = "seal warmstart " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["warmstart"] else None
    make_default_checkpoint(out, cfg, eval_tasks=args.eval_tasks, command=command)
    print(f"checkpoint: {out}  (seal eval seal/ToolUse-Bank-v0 --agent hf:{out} --temperature 0)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from seal_trl.train import positive_int as _positive  # no torch: seal_trl.train imports it lazily

    parser = argparse.ArgumentParser(prog="seal", description="SEAL-Gym: tool-use environments that co-evolve "
                                     "with the agent. See docs/cli.md.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("envs", help="list registered environment ids, their domains and split sizes")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("show", help="show one task: its user turns and reference plan")
    p.add_argument("task_id", help="a task id, e.g. bank/test/d2/100145 (native ids are domain/split/dN/seed)")
    p.add_argument("--env", help="resolve the id through this env's task set (for non-native ids)")
    p.add_argument("--state", action="store_true", help="also print the initial state")
    p.add_argument("--json", action="store_true", help="print the task as JSON")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("play", help="play an episode yourself; actions are read from stdin line by line")
    p.add_argument("env", help="an environment id, e.g. seal/ToolUse-v0")
    p.add_argument("--seed", type=int, default=0, help="reset seed (picks the task; default 0)")
    p.add_argument("--split", choices=SPLIT_CHOICES, help="split (default: the env's own)")
    p.add_argument("--task-id", help="play this task")
    p.add_argument("--index", type=int, help="play the task at this index of the split")
    p.add_argument("--domain", help="sample a task of this domain")
    p.add_argument("--max-steps", type=_positive, help="step budget (default: the env's)")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("eval", help="evaluate an agent: success rate, pass^k, per-domain and per-label tables")
    p.add_argument("env", help="an environment id, e.g. seal/ToolUse-v0")
    p.add_argument("--agent", required=True,
                   help="oracle | random | hf:<model id or path, or 'tiny'> | openai:<base url>#<model>")
    p.add_argument("--split", choices=SPLIT_CHOICES, default="test", help="split to evaluate (default test)")
    p.add_argument("--k", type=_positive, default=1, help="pass^k's k (default 1)")
    p.add_argument("--n", type=_positive, help="trials per task, n >= k (default k)")
    p.add_argument("--limit", type=_positive, help="only the first M tasks of the split")
    p.add_argument("--out", help="folder for eval.json and eval.md")
    p.add_argument("--seed", type=int, default=0, help="agent seed of trial 0; trial j uses seed+j (default 0)")
    p.add_argument("--batch-size", type=_positive, default=16, help="episodes run in lockstep (default 16)")
    p.add_argument("--max-steps", type=_positive, help="step budget per episode (default: the env's)")
    p.add_argument("--temperature", type=float, help="sampling temperature (hf default 1.0; 0 = greedy)")
    p.add_argument("--top-p", type=float, help="nucleus sampling (hf)")
    p.add_argument("--max-new-tokens", type=_positive, help="tokens per action (hf; max_tokens for openai)")
    p.add_argument("--device", help="torch device for hf agents (default cuda if available)")
    p.add_argument("--dtype", help="torch dtype for hf agents, e.g. bfloat16")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of Markdown")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("train", help="a SEAL co-evolution run (default: tiny offline model on CPU)")
    from seal_trl.train import add_arguments

    add_arguments(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("warmstart", help="train the default agent (SFT on oracle trajectories) with provenance")
    p.add_argument("--out", required=True, help="checkpoint folder (the shipped one: seal_trl/checkpoints/default)")
    p.add_argument("--steps", type=_positive, help="optimizer steps (default: the recipe's)")
    p.add_argument("--init", help="continue from this checkpoint (a second schedule) instead of random weights")
    p.add_argument("--eval-tasks", type=_positive, default=200, help="greedy test and ood tasks (default 200)")
    p.add_argument("--threads", type=_positive, default=2, help="torch threads (default 2)")
    p.add_argument("--overwrite", action="store_true", help="replace a checkpoint already in --out")
    p.set_defaults(func=cmd_warmstart)

    p = sub.add_parser("report", help="plots and a Markdown summary of a training run folder")
    p.add_argument("run_dir", help="a run folder with metrics.jsonl (see docs/cli.md)")
    p.add_argument("--out", help="output folder (default RUN_DIR/report)")
    p.set_defaults(func=cmd_report)
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("seal-gym")
    except Exception:  # pragma: no cover - not installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # `seal ... | head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (CLIError, ValueError, FileNotFoundError) as e:
        print(f"seal: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        # gymnasium's errors (unknown id...) and an unreachable model server are input problems too
        if type(e).__module__.startswith("gymnasium") or type(e).__name__ == "OpenAIError":
            print(f"seal: error: {e}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
