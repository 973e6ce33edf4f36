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


# -- checks that run before any slow work -------------------------------------------------
def check_env(env_id: str, split: str | None = None) -> int:
    """The number of tasks in ``split`` of ``env_id`` (its default split for ``None``), or a
    :class:`CLIError` that says what to type instead: run before a model loads, so a typo in
    the id or split costs a second, not a model load."""
    import gymnasium as gym

    import seal_envs  # noqa: F401  (registers the ids)

    if env_id not in gym.registry:
        raise CLIError(f"unknown environment id {env_id!r}; the ids are {', '.join(seal_envs.registered_ids())} "
                       "(`seal envs` lists them with their splits)")
    try:
        env = gym.make(env_id, disable_env_checker=True, **({"split": split} if split else {}))
        size = len(env.unwrapped.task_set)
        env.close()
    except (ImportError, ValueError, KeyError, NotImplementedError) as e:
        raise CLIError(f"{env_id} cannot be used here{f' with split {split!r}' if split else ''}: {e} "
                       "(`seal envs` shows which ids and splits are available)") from None
    if size == 0:
        raise CLIError(f"split {split!r} of {env_id} has no tasks (`seal envs` lists the split sizes)")
    return size


def check_out(out: str | Path) -> Path:
    """Create the output folder ``out`` and prove it writable before the work whose results go
    there: a bad ``--out`` is found in a second, not after the run."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise CLIError(f"--out {path} is a file, not a folder; choose a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".seal-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise CLIError(f"cannot write to --out {path} ({e.strerror or e}); choose a folder you can write to") from None
    return path


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
            row["domains"] = list(ts.domains)  # a TaskSource names both (seal_envs.core.source)
            row["held_out_domains"] = list(ts.held_out)
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

    size = check_env(args.env, args.split)
    if args.index is not None and args.index >= size:
        raise CLIError(f"--index {args.index} is past the end: the split has {size} tasks (0 to {size - 1})")
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

    from seal_trl.progress import progress_bar

    # everything that can be checked in a second is checked before the agent (a model) loads
    if args.n is not None and args.n < args.k:
        raise CLIError(f"--n {args.n} is smaller than --k {args.k}: pass^k needs at least k trials per task")
    check_env(args.env, args.split)
    if args.out:
        check_out(args.out)
    if args.agent.startswith("openai:"):  # a server that is down or refuses the key: say so before episode 1
        from seal_envs.openai_agent import check_server, parse_openai_spec

        try:
            base_url, _ = parse_openai_spec(args.agent)
        except ValueError as e:
            raise CLIError(str(e)) from None
        check_server(base_url)
    if args.agent.startswith("hf:") and (args.device or "").startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise CLIError(f"--device {args.device}: no CUDA device here; pass --device cpu or leave --device out")
    options = {"temperature": args.temperature, "top_p": args.top_p, "max_new_tokens": args.max_new_tokens,
               "max_tokens": args.max_new_tokens, "device": args.device, "dtype": args.dtype}
    try:
        agent = make_agent(args.agent, **options)
    except ValueError as e:
        raise CLIError(str(e)) from None
    env_kwargs = {"max_steps": args.max_steps} if args.max_steps else {}
    progress = progress_bar("seal eval", "episode", args.quiet)
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
    from seal_trl.train import prepare_out, run

    check_env(args.env, "train")
    try:
        prepare_out(Path(args.out), args.overwrite)
    except ValueError as e:
        raise CLIError(str(e)) from None
    check_out(args.out)
    out = run(args)
    print(f"run folder: {out}  (seal report {out})")
    return 0


def cmd_warmstart(args: argparse.Namespace) -> int:
    import dataclasses

    out = Path(args.out)
    if out.is_dir() and any(p.name != ".gitkeep" for p in out.iterdir()) and not args.overwrite:
        raise CLIError(f"{out} is not empty; pass --overwrite to replace the checkpoint in it")
    if args.init and not Path(args.init).is_dir():
        raise CLIError(f"--init {args.init} is not a checkpoint folder; pass the folder of a warm start")
    check_out(out)  # before torch loads and the training starts

    import torch

    from seal_trl.checkpoint import DEFAULT_WARMSTART, make_default_checkpoint
    torch.set_num_threads(args.threads)
    cfg = DEFAULT_WARMSTART if args.steps is None else dataclasses.replace(DEFAULT_WARMSTART, max_steps=args.steps)
    if args.init:
        cfg = dataclasses.replace(cfg, init_from=str(Path(args.init).resolve()))
    command = "seal warmstart " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["warmstart"] else None
    from seal_trl.progress import progress_bar

    make_default_checkpoint(out, cfg, eval_tasks=args.eval_tasks, command=command,
                            bar=lambda desc, unit: progress_bar(desc, unit, args.quiet))
    print(f"checkpoint: {out}  (seal eval seal/ToolUse-Bank-v0 --agent hf:{out} --temperature 0)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Every flag's help names its default and unit, and every number is checked as it is parsed
    (``tests/test_cli.py`` holds every option of every subcommand to both)."""
    # no torch: seal_trl.train imports it lazily
    from seal_trl.train import non_negative_float, non_negative_int, positive_int, probability

    parser = argparse.ArgumentParser(
        prog="seal", description="SEAL-Gym: tool-use environments that co-evolve with the agent. See docs/cli.md.",
        epilog=f"Exit status: 0 success, 1 `seal play` input ended early, 2 an error (one 'seal: error:' line; "
               f"--debug or {DEBUG_ENV}=1 shows its traceback), 130 interrupted.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--debug", action="store_true", help=f"show the traceback of an error (default off; "
                        f"or set {DEBUG_ENV}=1)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("envs", help="list registered environment ids, their domains and split sizes (about a second)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table (default off)")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("show", help="show one task: its user turns and reference plan (about 1 s)")
    p.add_argument("task_id", help="a task id exactly as printed, e.g. bank/test/d2/100145 (native ids are "
                   "domain/split/dN/seed)")
    p.add_argument("--env", help="resolve the id through this env's task set, for non-native ids such as BFCL's "
                   "(default: the native ids, then every BFCL env)")
    p.add_argument("--state", action="store_true", help="also print the initial state (default off)")
    p.add_argument("--json", action="store_true", help="print the task as JSON (default off)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("play", help="play an episode yourself; actions are read from stdin line by line")
    p.add_argument("env", help="an environment id, e.g. seal/ToolUse-v0 (`seal envs` lists them)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="reset seed, >= 0: picks the task (default 0)")
    p.add_argument("--split", choices=SPLIT_CHOICES, help="split (default: the env's own, train for most ids)")
    p.add_argument("--task-id", help="play this task, e.g. bank/train/d3/2 (default: the seed picks one)")
    p.add_argument("--index", type=non_negative_int, help="play the task at this index of the split, from 0 "
                   "(default: the seed picks one)")
    p.add_argument("--domain", help="sample a task of this domain (default: any)")
    p.add_argument("--max-steps", type=positive_int, help="step budget: actions per episode (default: the env's: 24, 60 for BFCL)")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("eval", help="evaluate an agent: success rate, pass^k, per-domain and per-label tables (oracle: seconds; a model: minutes, bounded by --limit)")
    p.add_argument("env", help="an environment id, e.g. seal/ToolUse-v0 (`seal envs` lists them)")
    p.add_argument("--agent", required=True,
                   help="oracle | random | hf:<model id or folder, 'default' or 'tiny'> | openai:<base url>#<model> "
                        "(required)")
    p.add_argument("--split", choices=SPLIT_CHOICES, default="test", help="split to evaluate (default %(default)s)")
    p.add_argument("--k", type=positive_int, default=1, help="pass^k's k, >= 1 (default %(default)s)")
    p.add_argument("--n", type=positive_int, help="trials per task, n >= k (default: k)")
    p.add_argument("--limit", type=positive_int, help="only the first M tasks of the split (default: all of them; "
                   "200 for test and ood)")
    p.add_argument("--out", help="folder for eval.json and eval.md, created if missing (default: write nothing)")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="agent seed of trial 0, >= 0; trial j uses seed+j (default %(default)s)")
    p.add_argument("--batch-size", type=positive_int, default=16,
                   help="episodes run in lockstep (default %(default)s)")
    p.add_argument("--max-steps", type=positive_int, help="step budget: actions per episode (default: the env's: 24, 60 for BFCL)")
    p.add_argument("--temperature", type=non_negative_float,
                   help="sampling temperature, >= 0; 0 = greedy (default: 1.0 for hf, the server's for openai)")
    p.add_argument("--top-p", type=probability, help="nucleus sampling, in (0, 1] (default 1.0 for hf, the "
                   "server's for openai)")
    p.add_argument("--max-new-tokens", type=positive_int,
                   help="tokens per action (default 256 for hf; max_tokens for openai, default the server's)")
    p.add_argument("--device", help="torch device for hf agents, e.g. cpu, cuda:0 (default cuda if available, else cpu)")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"],
                   help="torch dtype for hf agents (default: the model's own)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of Markdown (default off)")
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr (default off)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("train", help="GRPO from the shipped default agent with held-out evaluation before and "
                       "after (defaults: about 7 min on 2 CPU cores)")
    from seal_trl.train import add_arguments

    add_arguments(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("warmstart", help="train a warm start by the default agent's recipe (SFT on oracle "
                       "trajectories) with provenance (about 40 min on 2 CPU cores at the defaults, an estimate "
                       "scaled from the shipped agent's two runs of 32 min each)")
    p.add_argument("--out", required=True, help="checkpoint folder (required; the shipped one is "
                   "seal_trl/checkpoints/default)")
    p.add_argument("--steps", type=positive_int, help="optimizer steps (default: the recipe's, 2000)")
    p.add_argument("--init", help="continue from this checkpoint folder (a second schedule) "
                   "(default: random weights)")
    p.add_argument("--eval-tasks", type=positive_int, default=200,
                   help="greedy test and ood tasks evaluated (default %(default)s)")
    p.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads (default %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace a checkpoint already in --out (default off)")
    p.add_argument("--quiet", action="store_true", help="no progress bars (default off)")
    p.set_defaults(func=cmd_warmstart)

    p = sub.add_parser("report", help="plots and a Markdown summary of a training run folder (seconds)")
    p.add_argument("run_dir", help="a run folder with metrics.jsonl (see docs/cli.md)")
    p.add_argument("--out", help="output folder (default RUN_DIR/report)")
    p.set_defaults(func=cmd_report)

    for command in sub.choices.values():  # `seal eval ... --debug` works as well as `seal --debug eval ...`
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=f"show the traceback of an error (default off; or set {DEBUG_ENV}=1)")
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("seal-gym")
    except Exception:  # pragma: no cover - not installed
        return "unknown"


DEBUG_ENV = "SEAL_DEBUG"


def _expected_failure(e: BaseException) -> str | None:
    """The one-line message of a failure the user can fix (input, model, network, disk), or
    ``None`` for a bug, whose traceback is the useful output."""
    if isinstance(e, ModuleNotFoundError):
        return (f"{e}; this command needs the training extras: pip install torch==2.13.0 && "
                "pip install -e \".[train,plot]\"")
    if isinstance(e, (CLIError, ValueError, OSError)):  # OSError: a missing file, no permission, disk full
        return str(e) or type(e).__name__
    # gymnasium's errors (unknown id...) and an unreachable or refusing model server are input problems too
    if type(e).__module__.startswith("gymnasium") or type(e).__name__ == "OpenAIError":
        return f"{e}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. An expected failure is one ``seal: error: ...`` line and exit status 2
    (Ctrl-C: 130); ``--debug`` or ``SEAL_DEBUG=1`` shows its traceback too. A bug keeps its
    traceback, since that is what a report of it needs."""
    import os

    parser = build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if not debug:  # a failed hub request is reported once, as our error line, not also as a hub warning
        os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    if getattr(args, "quiet", False):  # no bar at all, the Hugging Face libraries' own included
        from seal_trl.progress import silence_library_bars

        silence_library_bars()
    try:
        return args.func(args)
    except BrokenPipeError:  # `seal ... | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"\nseal: error: interrupted; run the command again{RERUN_HINT.get(args.command, '')}", file=sys.stderr)
        return 130
    except Exception as e:
        message = _expected_failure(e)
        if message is None or debug:
            raise
        print(f"seal: error: {message}", file=sys.stderr)
        return 2


#: What to add when an interrupted command is run again.
RERUN_HINT = {"train": " with --overwrite (its --out folder holds the part that was written)",
              "warmstart": " with --overwrite"}


if __name__ == "__main__":
    sys.exit(main())
