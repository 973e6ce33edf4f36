"""``seal``: the command line, a thin layer over library functions.

    seal envs [--json]                          registered ids, domains, splits and sizes
    seal show TASK_ID [--json]                  one task: user turns and reference plan
    seal play ENV [--seed N] [--split S]        play an episode yourself (actions from stdin)
    seal eval ENV --agent A --split S --k N     success rate, pass^k, per-domain/label tables
    seal train [--out DIR] [flags]              GRPO from the shipped default agent, evaluated before and after
    seal warmstart --out DIR                    an SFT warm start by the default agent's recipe
    seal report RUN_DIR                         plots and a Markdown summary of a training run
    seal serve [ENV] [--port N]                 the environments over OpenEnv's protocol, for any client

Heavy imports (torch, transformers, matplotlib) happen only inside the commands that need them,
so ``seal envs`` stays fast and never imports torch. Every command is documented in
``docs/cli.md``. Exit status: 0 on success, 1 when ``play`` runs out of input before the episode
ends, 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from seal_cli.args import (add_train_arguments, config_field_flags, config_file_argv, non_negative_float,
                           non_negative_int, positive_int, probability)
from seal_cli.common import SPLIT_CHOICES, CLIError, add_mcp_arguments
from seal_cli.env_commands import SERVE_DEFAULT_ENV, cmd_envs, cmd_play, cmd_report, cmd_serve, cmd_show
from seal_cli.model_commands import cmd_eval, cmd_train, cmd_warmstart
from seal_envs.openai_agent import TOOLS_IN_PROMPT


class SealParser(argparse.ArgumentParser):
    """A usage error (a wrong flag, a bad value, a missing argument) is the same one
    ``seal: error:`` line and exit status 2 as every other expected failure, not argparse's usage
    block: the line names the command whose ``--help`` lists the flags."""

    def error(self, message: str):  # type: ignore[override]
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f"`seal {command} --help`" if command else "`seal --help`"
        self.exit(2, f"seal: error: {message} ({hint} lists the flags)\n")


def build_parser() -> argparse.ArgumentParser:
    """Every flag's help names its default and unit, and every number is checked as it is parsed
    (``tests/test_cli.py`` holds every option of every subcommand to both)."""
    parser = SealParser(
        prog="seal", description="SEAL-Gym: tool-use environments that co-evolve with the agent. See docs/cli.md.",
        epilog=f"Exit status: 0 success, 1 `seal play` input ended early, 2 an error (one 'seal: error:' line; "
               f"--debug or {DEBUG_ENV}=1 shows its traceback), 130 interrupted.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--debug", action="store_true", help=f"show the traceback of an error (default off; "
                        f"or set {DEBUG_ENV}=1)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=SealParser)

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
    add_mcp_arguments(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("play", help="play an episode yourself; actions are read from stdin line by line")
    p.add_argument("env", nargs="?", help="an environment id, e.g. seal/ToolUse-v0 (`seal envs` lists them; "
                   "leave it out with --server and --tasks)")
    add_mcp_arguments(p)
    p.add_argument("--seed", type=non_negative_int, default=0, help="reset seed, >= 0: picks the task (default 0)")
    p.add_argument("--split", choices=SPLIT_CHOICES, help="split (default: the env's own, train for most ids)")
    p.add_argument("--task-id", help="play this task, e.g. bank/train/d3/2 (default: the seed picks one)")
    p.add_argument("--index", type=non_negative_int, help="play the task at this index of the split, from 0 "
                   "(default: the seed picks one)")
    p.add_argument("--domain", help="sample a task of this domain (default: any)")
    p.add_argument("--max-steps", type=positive_int, help="step budget: actions per episode (default: the env's: 24, 60 for BFCL)")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("eval", help="evaluate an agent: success rate, pass^k, per-domain and per-label tables (oracle: seconds; a model: minutes, bounded by --limit)")
    p.add_argument("env", nargs="?", help="an environment id, e.g. seal/ToolUse-v0 (`seal envs` lists them; "
                   "leave it out with --server and --tasks)")
    add_mcp_arguments(p)
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
    p.add_argument("--concurrency", type=positive_int, default=16,
                   help="openai agents: chat requests in flight at once, >= 1, at most one per running episode "
                        "of a batch, so also at most --batch-size; other agents ignore it (default %(default)s)")
    p.add_argument("--tools-in-prompt", choices=list(TOOLS_IN_PROMPT), default="auto",
                   help="openai agents: where the tools go. auto: the request's `tools` field, unless a probe at "
                        "the start (the same short request with and without a tool, compared by "
                        "usage.prompt_tokens) finds that the server ignores or refuses it; then the system "
                        "message, as a chat template writes tools, in the env's call format, with calls read "
                        "from the text. always: the system message. never: the `tools` field. eval.json's "
                        "agent_info records which; other agents ignore it (default %(default)s)")
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
                       "after (defaults: about 5 min on 2 CPU cores)")
    add_train_arguments(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("warmstart", help="train a warm start by the default agent's recipe (SFT on oracle "
                       "trajectories) with provenance (about 40 min on 2 CPU cores at the defaults, an estimate "
                       "scaled from the shipped agent's two runs of 32 min each)")
    p.add_argument("--out", required=True, help="checkpoint folder (required; the shipped one is "
                   "seal_trl/agent/checkpoints/default)")
    p.add_argument("--steps", type=positive_int, help="optimizer steps (default: the recipe's, 2000)")
    p.add_argument("--init", help="continue from this checkpoint folder (a second schedule) "
                   "(default: random weights)")
    p.add_argument("--eval-tasks", type=positive_int, default=200,
                   help="greedy test and ood tasks evaluated (default %(default)s)")
    p.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads (default %(default)s)")
    p.add_argument("--save-every", type=positive_int, default=0, metavar="N",
                   help="also keep the model every N steps in OUT/steps/step-NNNNN: the points along the "
                        "schedule where a skill emerges (default: only the final model)")
    p.add_argument("--overwrite", action="store_true", help="replace a checkpoint already in --out (default off)")
    p.add_argument("--quiet", action="store_true", help="no progress bars (default off)")
    p.set_defaults(func=cmd_warmstart)

    p = sub.add_parser("report", help="plots and a Markdown summary of a training run folder (seconds)")
    p.add_argument("run_dir", help="a run folder with metrics.jsonl (see docs/cli.md)")
    p.add_argument("--out", help="output folder (default RUN_DIR/report)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("serve", help="serve an environment over OpenEnv's WebSocket protocol to any client "
                       "(until Ctrl-C; needs the frameworks extra)")
    p.add_argument("env", nargs="?", default=SERVE_DEFAULT_ENV, help="an environment id (default %(default)s; "
                   "`seal envs` lists them; seal/MCP-v0 with --server and --tasks)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s: this machine "
                   "only; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=non_negative_int, default=8000, help="TCP port, 0 for any free one (default %(default)s)")
    p.add_argument("--max-sessions", type=positive_int, default=64,
                   help="concurrent sessions, one env each; one more is refused with an error (default %(default)s)")
    p.add_argument("--idle-timeout", type=non_negative_float, default=300.0,
                   help="close a session idle this many seconds and free its env, 0 = never (default %(default)s)")
    p.add_argument("--surface-channel", help="a SurfaceChannel file: train sessions show its newest surface at each "
                   "reset (default: the canonical surface)")
    p.add_argument("--split", choices=SPLIT_CHOICES, help="split (default: the env's own, train for most ids)")
    p.add_argument("--max-steps", type=positive_int, help="step budget: actions per episode (default: the env's: "
                   "24, 60 for BFCL)")
    add_mcp_arguments(p)
    p.set_defaults(func=cmd_serve)

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
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extra = _parse(parser, argv)
    except ValueError as e:  # --config or a SEALConfig field flag that does not parse
        print(f"seal: error: {e}", file=sys.stderr)
        return 2
    debug = getattr(args, "debug", False) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if not debug:  # a failed hub request is reported once, as our error line, not also as a hub warning
        os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    if getattr(args, "quiet", False):  # no bar at all, the Hugging Face libraries' own included
        from seal_trl.training.progress import silence_library_bars

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


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Parse ``argv``; for ``seal train``, a ``--config`` file's flags go first (the command line
    wins) and arguments its own flags do not know are SEALConfig fields (TRL's parser)."""
    args, extra = parser.parse_known_args(argv)
    if args.command != "train":
        if extra:
            parser._subparsers._group_actions[0].choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
        return args, extra
    from_file = 0
    if args.config:
        train = parser._subparsers._group_actions[0].choices["train"]
        config = config_file_argv(train, args.config)
        from_file = sum(a.startswith("--set=") for a in config)
        at = argv.index("train") + 1
        args, extra = parser.parse_known_args(argv[:at] + config + argv[at:])
    # SEALConfig fields, later ones winning: the file's, then --FIELD flags, then --set
    file_fields, command_line = args.config_set[:from_file], args.config_set[from_file:]
    args.config_set = [*file_fields, *config_field_flags(extra), *command_line]
    return args, extra


#: What to add when an interrupted command is run again.
RERUN_HINT = {"train": " with --overwrite (its --out folder holds the part that was written)",
              "warmstart": " with --overwrite"}


if __name__ == "__main__":
    sys.exit(main())
