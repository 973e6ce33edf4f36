"""The commands that run a model: ``seal eval`` (any agent), ``seal train`` and ``seal warmstart``.
``seal_trl`` and torch are imported inside each command, after the checks that take a second."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seal_cli.common import CLIError, check_env, check_out, mcp_env, print_json


# -- seal eval -----------------------------------------------------------------------------
def cmd_eval(args: argparse.Namespace) -> int:
    import seal_envs  # noqa: F401
    from seal_envs.eval import evaluate
    from seal_trl.agent.agents import make_agent

    from seal_trl.training.progress import progress_bar

    # everything that can be checked in a second is checked before the agent (a model) loads
    if args.n is not None and args.n < args.k:
        raise CLIError(f"--n {args.n} is smaller than --k {args.k}: pass^k needs at least k trials per task")
    env_id, env_kwargs = mcp_env(args, args.env)
    check_env(env_id, args.split, **env_kwargs)
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
               "max_tokens": args.max_new_tokens, "device": args.device, "dtype": args.dtype,
               "concurrency": args.concurrency, "tools_in_prompt": args.tools_in_prompt}
    try:
        agent = make_agent(args.agent, **options)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if hasattr(agent, "tools_line"):  # an OpenAI server: probe it once and say where the tools go, before episode 1
        import logging

        logging.getLogger("seal_envs.openai_agent").addHandler(logging.NullHandler())  # said here, once
        print(f"[seal eval] {agent.tools_line(_call_format(args.env))}", file=sys.stderr)
    env_kwargs |= {"max_steps": args.max_steps} if args.max_steps else {}
    progress = progress_bar("seal eval", "episode", args.quiet)
    result = evaluate(env_id, agent, split=args.split, k=args.k, n=args.n, limit=args.limit, seed=args.seed,
                      batch_size=args.batch_size, env_kwargs=env_kwargs, agent_name=args.agent, progress=progress)
    if args.out:
        paths = result.save(args.out)
        if not args.quiet:
            print(f"[seal eval] wrote {paths['json']} and {paths['markdown']}", file=sys.stderr)
    if args.json:
        print_json(result.summary() | {"per_domain": result.per_domain(), "per_label": result.per_label()})
    else:
        print(result.to_markdown(), end="")
    failed = [e for e in result.episodes if e.get("agent_error")]
    if failed:  # the played episodes are kept (above); the agent's failures still fail the command
        print(f"seal: error: the agent failed in {len(failed)} of {len(result.episodes)} episodes, first: "
              f"{failed[0]['agent_error']}", file=sys.stderr)
        return 2
    return 0


def _call_format(env_id: str):
    """The call format the env's prompt asks for (what a tools-in-prompt block spells calls in)."""
    import gymnasium as gym

    env = gym.make(env_id, disable_env_checker=True)
    try:
        return env.unwrapped.call_format
    finally:
        env.close()


def cmd_train(args: argparse.Namespace) -> int:
    from seal_trl.training.train import RECIPE, prepare_out, run

    if args.server or args.tasks:  # your own tools: --env keeps its default unless named
        args.env, args.env_kwargs = mcp_env(args, None if args.env == RECIPE["env"] else args.env)
    check_env(args.env, "train", **getattr(args, "env_kwargs", {}))
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

    from seal_trl.agent.checkpoint import DEFAULT_WARMSTART, make_default_checkpoint
    torch.set_num_threads(args.threads)
    cfg = DEFAULT_WARMSTART if args.steps is None else dataclasses.replace(DEFAULT_WARMSTART, max_steps=args.steps)
    if args.init:
        cfg = dataclasses.replace(cfg, init_from=str(Path(args.init).resolve()))
    command = "seal warmstart " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["warmstart"] else None
    from seal_trl.training.progress import progress_bar

    make_default_checkpoint(out, cfg, eval_tasks=args.eval_tasks, command=command,
                            bar=lambda desc, unit: progress_bar(desc, unit, args.quiet), save_every=args.save_every)
    print(f"checkpoint: {out}  (seal eval seal/ToolUse-Bank-v0 --agent hf:{out} --temperature 0)")
    return 0
