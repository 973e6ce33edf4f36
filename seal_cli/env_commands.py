"""The commands that need only the environments: ``seal envs``, ``show``, ``play`` and ``report``.
Nothing here imports torch, transformers or ``seal_trl``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from seal_cli.common import MCP_ID, SPLIT_CHOICES, CLIError, check_env, format_table, mcp_env, print_json


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
        print_json(rows)
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
    print(format_table(["id", "default split", "domains", *SPLIT_CHOICES], table))
    print(f"\n{MCP_ID}: your own tools: an MCP server and a task file (--server, --tasks; docs/mcp.md)")
    return 0


# -- seal show -----------------------------------------------------------------------------
def find_task(task_id: str, env_id: str | None = None, env_kwargs: dict | None = None):
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
            env = gym.make(candidate, disable_env_checker=True, **(env_kwargs or {}))
            try:
                return env.unwrapped.task_set.task_from_id(task_id)
            finally:
                env.close()
        except (ValueError, KeyError, ConnectionError) as e:
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
    env_kwargs: dict = {}
    if args.server or args.tasks:
        env_id, env_kwargs = mcp_env(args, args.env)
    else:
        env_id = args.env
    task = find_task(args.task_id, env_id, env_kwargs)
    if args.json:
        print_json(task.to_dict())
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
    from seal_envs.core.official import official_tag_of_step
    from seal_envs.core.types import StepLabel

    v = info["verdict"]
    lines = [f"verdict: {'PASS' if v['passed'] else 'FAIL'}   reward: {reward:g}   progress: {v['progress']:.2f}   "
             f"turns passed: {v['turns_passed']}", "checks:"]
    lines += [f"  [{'x' if c['passed'] else ' '}] {c['name']}" + (f": {c['detail']}" if c.get("detail") else "")
              for c in v["checks"]]
    rows, changed = [], []
    for i, d in enumerate(info["step_labels"]):
        lb = StepLabel.from_dict(d)
        row = [i, lb.turn, lb.label, official_tag_of_step(lb), lb.tool or "", lb.detail[:70]]
        if live_labels is not None:
            live = live_labels[i] if i < len(live_labels) else "?"
            row.insert(3, live if live == lb.label else f"{live} *")
            if live != lb.label:
                changed.append(i)
        rows.append(row)
    headers = ["action", "user turn", "label", "official tag", "tool", "detail"]
    if live_labels is not None:
        headers.insert(3, "label while playing")
    lines += ["turn labels (one per action):", format_table(headers, rows)]
    if changed:
        lines.append(f"* {len(changed)} label(s) changed at the end: the label printed after an action sees only that "
                     "action and the ones before it; the final diagnosis aligns each user turn with its reference plan "
                     "and the verifier's checks, so it can name a fault that shows only then (docs/diagnosis.md).")
    return "\n".join(lines)


def cmd_play(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import seal_envs  # noqa: F401  (registers the ids)

    env_id, kwargs = mcp_env(args, args.env)
    size = check_env(env_id, args.split, **kwargs)
    if args.index is not None and args.index >= size:
        raise CLIError(f"--index {args.index} is past the end: the split has {size} tasks (0 to {size - 1})")
    if args.split:
        kwargs["split"] = args.split
    if args.max_steps:
        kwargs["max_steps"] = args.max_steps
    env = gym.make(env_id, **kwargs)
    try:
        return _play(env, args)
    finally:
        env.close()


def _play(env, args: argparse.Namespace) -> int:
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
            print(_tools_text(env.unwrapped.tools))
            continue
        obs, reward, terminated, truncated, info = env.step(action)
        label = info["step_label"]["label"] if info.get("step_label") else "?"
        live_labels.append(label)
        if obs:
            print(obs)
        print(f"(step {len(env.unwrapped.steps)}, user turn {info['user_turn']}, label so far: {label})")
        if terminated or truncated:
            print(f"== episode {'ended' if terminated else 'cut at the step budget'} ==")
            print(verdict_text(reward, info, live_labels))
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


# -- seal serve ----------------------------------------------------------------------------
SERVE_DEFAULT_ENV = "seal/ToolUse-v0"


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve one env id over OpenEnv's protocol until interrupted. The id, the port and the
    framework install are checked before the server's slow import, each as one error line."""
    import socket

    extra: dict = {}
    if args.server or args.tasks:  # your own tools; the positional id keeps its default unless named
        args.env, extra = mcp_env(args, None if args.env == SERVE_DEFAULT_ENV else args.env)
    check_env(args.env, args.split, **extra)
    if args.port > 65535:
        raise CLIError(f"--port {args.port} is not a TCP port; use 1-65535, or 0 for any free one")
    try:
        import uvicorn

        from seal_envs.integrations.openenv import create_app
    except ImportError as e:
        hint = ('pip install "mcp<2" (openenv 0.10 needs it; verifiers 0.4 installs mcp 2)' if "mcp" in str(e).lower()
                else 'pip install -e ".[frameworks]"')
        raise CLIError(f"seal serve needs OpenEnv, which does not import here ({e}): {hint}") from None
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        sock.listen(2048)  # from now on a client's connection waits in the backlog until the server accepts it
    except OSError as e:
        sock.close()
        raise CLIError(f"cannot listen on {args.host}:{args.port} ({e.strerror or e}); choose another --port "
                       "(0 picks a free one)") from None
    env_kwargs = {**extra, **{k: v for k, v in (("split", args.split), ("max_steps", args.max_steps)) if v is not None}}
    app = create_app(args.env, max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout or None,
                     surface_channel=args.surface_channel, **env_kwargs)
    host, port = sock.getsockname()[:2]
    print(f"serving {args.env} over OpenEnv on http://{host}:{port} (WebSocket /ws; at most {args.max_sessions} "
          f"sessions, idle timeout {f'{args.idle_timeout:g} s' if args.idle_timeout else 'none'}); Ctrl-C stops",
          flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shuts down on Ctrl-C, then re-raises it: stopping is the normal end
        pass
    print("seal serve: stopped", file=sys.stderr)
    return 0
