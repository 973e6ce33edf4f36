"""The `seal` command line, every command run in a subprocess on small inputs."""

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import seal_envs
from seal_envs.agents import OracleAgent
from seal_envs.core.calls import format_calls_hermes
from seal_envs.openai_agent import PROBE_MESSAGES
from seal_envs.core.types import ToolCall

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"}


def _spell(action):
    return format_calls_hermes([action]) if isinstance(action, ToolCall) else action


def seal(*args, stdin=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "seal_cli", *map(str, args)], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=ENV)


def test_console_script_and_help():
    script = shutil.which("seal") or str(Path(sys.executable).parent / "seal")
    out = subprocess.run([script, "--help"], capture_output=True, text=True, env=ENV, timeout=60)
    assert out.returncode == 0
    for command in ("envs", "show", "play", "eval", "report"):
        assert command in out.stdout


# -- envs ------------------------------------------------------------------------------------
def test_envs_table_and_json_without_torch():
    code = ("import sys; from seal_cli.main import main; main(['envs']); print('@@'); main(['envs', '--json']); "
            "print('@@', sorted(m for m in ('torch', 'transformers', 'trl', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert out.returncode == 0, out.stderr
    table, as_json, imported = out.stdout.split("@@")
    assert imported.strip() == "[]"                              # `seal envs` never imports torch
    for env_id in ("seal/ToolUse-v0", "seal/ToolUse-OOD-v0", "seal/ToolUse-Bank-v0"):
        assert env_id in table
    assert "400" in table and "200" in table
    rows = {r["id"]: r for r in json.loads(as_json)}
    mix = rows["seal/ToolUse-v0"]
    assert mix["splits"] == {"train": 400, "test": 200, "ood": 200}
    assert "bank" in mix["domains"] and mix["held_out_domains"] == ["smarthome"]
    assert rows["seal/ToolUse-OOD-v0"]["default_split"] == "ood"
    assert set(rows) == set(seal_envs.registered_ids())


# -- show ------------------------------------------------------------------------------------
def test_show_text_and_json():
    task = seal_envs.task_from_id("bank/test/d2/100145")
    out = seal("show", task.task_id)
    assert out.returncode == 0, out.stderr
    assert task.turns[0].message in out.stdout
    for call in task.plan:
        assert f"{call.name}({json.dumps(dict(call.arguments), ensure_ascii=False)})" in out.stdout
    data = json.loads(seal("show", task.task_id, "--json").stdout)
    assert data == task.to_dict()


def test_show_unknown_id_is_an_error():
    out = seal("show", "nope/test/d1/1")
    assert out.returncode == 2 and "seal: error" in out.stderr and "Traceback" not in out.stderr


def test_show_short_id_is_refused_with_the_exact_id():
    """`seal show bank/train/3/2` used to print the task bank/train/d3/2: ids round-trip exactly."""
    out = seal("show", "bank/train/3/2")
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr
    assert out.stderr.startswith("seal: error:") and "did you mean bank/train/d3/2?" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


# -- play ------------------------------------------------------------------------------------
def _oracle_script(task):
    agent = OracleAgent()
    return [a for t in range(len(task.turns)) for a in map(_spell, agent.plan_turn(task, t))]


def test_play_with_piped_oracle_actions_passes():
    task = seal_envs.task_from_id("bank/test/d2/100145")
    script = "\n".join([":help", ":tools", *_oracle_script(task)]) + "\n"
    out = seal("play", "seal/ToolUse-v0", "--task-id", task.task_id, stdin=script)
    assert out.returncode == 0, out.stderr
    assert task.turns[0].message in out.stdout
    assert "verify_identity(" in out.stdout                     # :tools listed the tools
    assert "verdict: PASS" in out.stdout and "reward: 1" in out.stdout
    rows = out.stdout.split("turn labels")[1].strip().splitlines()[3:]
    assert len(rows) == len(_oracle_script(task)) and all(r.split()[2:4] == ["ok", "ok"] for r in rows)
    assert "premature_end" not in out.stdout and "changed at the end" not in out.stdout


def test_play_live_and_final_labels_agree_or_the_difference_is_explained():
    """`seal play` printed constraint_violation while playing and wrong_order in its final table,
    with no word on why (issue 20): the table shows both, marks the change and says why."""
    transfer = '{"name": "transfer", "arguments": {"from_account": "ACC-1002", "to_account": "ACC-1003", "amount": 1640}}'
    verify = '{"name": "verify_identity", "arguments": {"customer_id": "C-5941", "pin": "9086"}}'
    out = seal("play", "seal/ToolUse-Bank-v0", "--split", "train", "--task-id", "bank/train/d2/5",
               stdin="\n".join([transfer, verify, transfer, "Done, balance 1164."]) + "\n")
    assert out.returncode == 0, out.stderr
    live = [line.split("label so far: ")[1].rstrip(")") for line in out.stdout.splitlines() if "label so far: " in line]
    assert live == ["constraint_violation", "ok", "ok", "ok"]
    table = out.stdout.split("turn labels (one per action):")[1].strip().splitlines()
    assert "label while playing" in table[0]
    first = table[2].split()
    assert first[2:5] == ["wrong_order", "constraint_violation", "*"]
    assert "1 label(s) changed at the end" in out.stdout and "reference plan" in out.stdout


def test_play_wrong_answer_fails_with_labels():
    out = seal("play", "seal/ToolUse-v0", "--seed", "3", "--split", "test", stdin="I cannot help.\n")
    assert out.returncode == 0, out.stderr
    assert "verdict: FAIL" in out.stdout and "premature_end" in out.stdout


def test_play_multiline_action_and_early_eof():
    task = seal_envs.task_from_id("bank/test/d2/100145")
    call = task.turns[0].plan[0]
    text = json.dumps({"name": call.name, "arguments": dict(call.arguments)})
    half = len(text) // 2
    out = seal("play", "seal/ToolUse-v0", "--task-id", task.task_id, stdin=f"{text[:half]}\\\n{text[half:]}\n")
    assert out.returncode == 1                                   # input ended before the episode did
    assert "label so far: ok" in out.stdout and "input ended" in out.stdout


# -- eval ------------------------------------------------------------------------------------
@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_eval_oracle_is_perfect_on_every_split(split, tmp_path):
    out = seal("eval", "seal/ToolUse-v0", "--agent", "oracle", "--split", split, "--k", 2, "--limit", 5,
               "--out", tmp_path)
    assert out.returncode == 0, out.stderr
    assert "| success rate | 1.0000 |" in out.stdout and "| pass^2 | 1.0000 |" in out.stdout
    assert "## Per domain" in out.stdout and "## Per label" in out.stdout
    data = json.loads((tmp_path / "eval.json").read_text())
    assert data["summary"]["success_rate"] == 1.0 and data["summary"]["pass^2"] == 1.0
    assert data["summary"]["tasks"] == 5 and len(data["episodes"]) == 10
    assert (tmp_path / "eval.md").read_text() == out.stdout


@pytest.mark.slow
def test_eval_json_output_and_bad_agent():
    out = seal("eval", "seal/ToolUse-Bank-v0", "--agent", "random", "--k", 1, "--limit", 2, "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["episodes"] == 2 and 0.0 <= summary["success_rate"] <= 1.0 and "per_label" in summary
    bad = seal("eval", "seal/ToolUse-v0", "--agent", "gpt-4", "--limit", 1)
    assert bad.returncode == 2 and "unknown agent" in bad.stderr
    bad = seal("eval", "seal/ToolUse-v0", "--agent", "oracle", "--k", 3, "--n", 2, "--limit", 1)
    assert bad.returncode == 2 and "--n 2 is smaller than --k 3" in bad.stderr


# -- eval against an OpenAI-compatible server (a real socket on 127.0.0.1) --------------------
class ChatServer:
    """Speaks chat-completions and replays a scripted list of assistant messages."""

    def __init__(self, responses, status=200):
        self.responses, self.requests, self.probes, self.status = list(responses), [], [], status
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                probe = body.get("max_tokens") == 1 and body["messages"] == list(PROBE_MESSAGES)
                (owner.probes if probe else owner.requests).append({"path": self.path, "body": body,
                                                                     "auth": self.headers.get("Authorization")})
                if owner.status != 200:
                    payload = {"error": {"message": "scripted failure"}}
                elif probe:  # the agent's tools probe: a server whose template renders tools
                    payload = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "It"}}],
                               "usage": {"prompt_tokens": 20 + (60 if body.get("tools") else 0)}}
                else:
                    message = owner.responses.pop(0) if owner.responses else {"role": "assistant", "content": "Done."}
                    payload = {"id": f"chatcmpl-{len(owner.requests)}", "object": "chat.completion",
                               "model": body["model"],
                               "choices": [{"index": 0, "message": message,
                                            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}]}
                data = json.dumps(payload).encode()
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def oracle_messages(task):
    """The oracle's actions as OpenAI assistant messages (calls as tool_calls)."""
    out = []
    for t in range(len(task.turns)):
        for i, a in enumerate(OracleAgent().plan_turn(task, t)):
            if isinstance(a, ToolCall):
                out.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{t}_{i}", "type": "function",
                     "function": {"name": a.name, "arguments": json.dumps(dict(a.arguments))}}]})
            else:
                out.append({"role": "assistant", "content": a})
    return out


def test_eval_openai_agent_against_a_local_server(tmp_path):
    import gymnasium as gym

    env = gym.make("seal/ToolUse-v0", split="test")
    task = env.unwrapped.task_set[0]
    script = oracle_messages(task)
    with ChatServer(script) as server:
        out = seal("eval", "seal/ToolUse-v0", "--agent", f"openai:{server.url}#test-model", "--split", "test",
                   "--k", 1, "--limit", 1, "--seed", 7, "--temperature", 0.5, "--out", tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "eval.json").read_text())
    assert data["summary"]["success_rate"] == 1.0 and data["episodes"][0]["task_id"] == task.task_id
    assert len(server.requests) == len(script)
    assert [("tools" in p["body"]) for p in server.probes] == [False, True]  # one probe for the evaluation
    first, last = server.requests[0], server.requests[-1]
    assert first["path"] == "/v1/chat/completions"
    assert first["body"]["model"] == "test-model" and first["body"]["seed"] == 7
    assert first["body"]["temperature"] == 0.5
    assert [m["role"] for m in first["body"]["messages"]] == ["system", "user"]
    assert {t["function"]["name"] for t in first["body"]["tools"]} >= {c.name for c in task.plan}
    assert any(m["role"] == "tool" for m in last["body"]["messages"]) or not task.plan


def test_eval_openai_server_error_is_reported():
    with ChatServer([], status=400) as server:
        out = seal("eval", "seal/ToolUse-v0", "--agent", f"openai:{server.url}#m", "--limit", 1, "--quiet")
    assert out.returncode == 2 and "HTTP 400" in out.stderr and "scripted failure" in out.stderr


def test_openai_agent_in_process_sends_key_and_parses_tool_calls():
    import gymnasium as gym

    from seal_envs.agents import run_episode
    from seal_envs.openai_agent import OpenAIChatAgent, parse_openai_spec

    assert parse_openai_spec("openai:http://h:1/v1#org/model-7b") == ("http://h:1/v1", "org/model-7b")
    env = gym.make("seal/ToolUse-v0", split="test")
    task = env.unwrapped.task_set[1]
    with ChatServer(oracle_messages(task)) as server:
        agent = OpenAIChatAgent(server.url + "/", "m", api_key="sk-test", seed=1)
        reward, info, actions = run_episode(env, agent, options={"index": 1})
    assert reward == 1.0 and {lb["label"] for lb in info["step_labels"]} == {"ok"}
    assert server.requests[0]["auth"] == "Bearer sk-test"
    assert isinstance(actions[0], dict) and actions[0]["role"] == "assistant"


# -- report ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_report_command(tmp_path):
    from seal_envs.run_folder import RunWriter

    w = RunWriter(tmp_path / "run")
    for step in range(3):
        w.log(step, {"success_rate": step / 2, "reward": step / 2, "labels/ok": 0.5 + step / 4,
                     "labels/format_error": 0.5 - step / 4, "surface_version": step})
    w.log_patches(1, [{"channel": "recovery", "scope": "format_error", "level": 1, "reason": "r"}], update=1)
    out = seal("report", tmp_path / "run")
    assert out.returncode == 0, out.stderr
    assert "# Training run `run`" in out.stdout and "| success_rate | 0.0000 | 1.0000 |" in out.stdout
    report = tmp_path / "run" / "report"
    for name in ("report.md", "series.json", "success.png", "labels.png", "surface.png"):
        assert (report / name).is_file(), name
    series = json.loads((report / "series.json").read_text())
    assert series["success"]["success_rate"] == [0.0, 0.5, 1.0]
    assert series["surface"]["scopes"]["recovery/format_error"] == {"x": [0, 1, 2], "level": [0, 1, 1]}
    missing = seal("report", tmp_path / "nothing")
    assert missing.returncode == 2 and "metrics.jsonl" in missing.stderr


# -- every flag, every failure (issue 20) ------------------------------------------------------
def _options():
    """(command, action) for every option of every subcommand."""
    from seal_cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    yield "", parser
    for name, command in sub.choices.items():
        yield name, command


def test_every_help_names_its_default():
    """`seal --help` and every subcommand's --help name the default of every option."""
    for name, command in _options():
        for action in command._actions:
            if action.dest in ("help", "version", "command") or not action.option_strings:
                continue
            assert action.help and ("default" in action.help or "required" in action.help), (name, action.dest)


def test_every_numeric_flag_is_validated():
    """No option takes a bare int or float: each number is range-checked as argparse parses it,
    so `--steps -1` or `--temperature nan` is a usage error (exit 2), never a run."""
    from seal_cli import args

    checked = {args.positive_int, args.non_negative_int, args.positive_float, args.non_negative_float,
               args.probability}
    numeric = 0
    for name, command in _options():
        for action in command._actions:
            assert action.type not in (int, float), f"seal {name} {action.option_strings}: unchecked number"
            if action.type in checked:
                numeric += 1
                for bad in ("-1", "nan", "x"):
                    with pytest.raises(SystemExit) as e:
                        command.parse_args(_required(name) + [action.option_strings[0], bad])
                    assert e.value.code == 2, (name, action.option_strings, bad)
    assert numeric >= 25


def _required(name):
    return {"play": ["seal/ToolUse-v0"], "eval": ["seal/ToolUse-v0", "--agent", "oracle"],
            "warmstart": ["--out", "x"], "show": ["bank/train/d1/0"], "report": ["r"]}.get(name, [])


@pytest.mark.parametrize("args, fragment", [
    (["eval", "seal/Nope-v0", "--agent", "hf:does/not-exist"], "unknown environment id 'seal/Nope-v0'"),
    (["eval", "seal/ToolUse-v0", "--agent", "hf:does/not-exist", "--k", "2", "--n", "1"], "--n 1 is smaller than --k 2"),
    (["play", "seal/Nope-v0"], "seal envs"),
    (["serve", "seal/Nope-v0"], "unknown environment id 'seal/Nope-v0'"),
    (["serve", "--port", "70000"], "--port 70000 is not a TCP port"),
    (["play", "seal/ToolUse-Bank-v0", "--split", "test", "--index", "200"], "--index 200 is past the end"),
    (["train", "--env", "seal/Nope-v0", "--model", "does/not-exist"], "unknown environment id"),
    (["train", "--rl-tools", "set_alrt", "--model", "does/not-exist"], "unknown tool(s) set_alrt"),
    (["show", "bank/train/3/2"], "did you mean bank/train/d3/2?"),
    (["report", "no/such/run"], "no/such/run"),
    (["warmstart", "--out", "/proc/seal-cannot-write"], "cannot write to --out"),
    (["warmstart", "--out", "ck", "--init", "no/such/checkpoint"], "--init no/such/checkpoint is not a checkpoint"),
    (["train", "--server", "python server.py", "--env", "seal/ToolUse-v0", "--tasks", "tasks.jsonl"], "leave out the id"),
])
def test_expected_failures_are_one_line_before_any_slow_work(args, fragment, tmp_path, capsys, monkeypatch):
    """A bad env id, split, index or --out is found before a model loads: one line, exit 2, fast.
    In-process (``main``), as a flag check needs no interpreter of its own; the subprocess path
    (console script, exit status) is tested once above."""
    import time

    from seal_cli.main import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_VERBOSITY", "error")  # what main sets; restored after the test
    monkeypatch.chdir(tmp_path)
    if args[0] == "train":
        args = args + ["--out", str(tmp_path / "run")]
    start = time.perf_counter()
    try:
        code = main(args)
    except SystemExit as e:  # argparse's own errors exit through SealParser
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert err.startswith("seal: error:") and len(err.strip().splitlines()) == 1, err
    assert fragment in err and "Traceback" not in err
    assert time.perf_counter() - start < 60


def test_eval_out_that_cannot_be_written_is_refused_before_the_agent_loads(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = seal("eval", "seal/ToolUse-Bank-v0", "--agent", "hf:does/not-exist", "--out", blocker)
    assert out.returncode == 2 and "is a file, not a folder" in out.stderr and "cannot load model" not in out.stderr
    out = seal("eval", "seal/ToolUse-Bank-v0", "--agent", "hf:does/not-exist", "--out", blocker / "sub")
    assert out.returncode == 2 and "cannot write to --out" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_debug_flag_and_env_variable_show_the_traceback():
    for extra, env in ((["--debug"], {}), ([], {"SEAL_DEBUG": "1"})):
        out = subprocess.run([sys.executable, "-m", "seal_cli", "show", "bank/train/3/2", *extra],
                             capture_output=True, text=True, timeout=60, env={**ENV, **env})
        assert out.returncode != 0 and "Traceback" in out.stderr and "did you mean bank/train/d3/2?" in out.stderr
    out = seal("--debug", "show", "bank/train/3/2")
    assert "Traceback" in out.stderr


def test_interrupt_and_missing_extras_are_one_line(monkeypatch, capsys):
    import seal_cli.main as cli

    def interrupted(args):
        raise KeyboardInterrupt

    def no_torch(args):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr(cli, "cmd_train", interrupted)
    assert cli.main(["train"]) == 130
    err = capsys.readouterr().err
    assert "seal: error: interrupted" in err and "--overwrite" in err and "Traceback" not in err
    monkeypatch.setattr(cli, "cmd_envs", no_torch)
    assert cli.main(["envs"]) == 2
    assert "pip install" in capsys.readouterr().err


def test_eval_shows_a_progress_bar_unless_quiet():
    out = seal("eval", "seal/ToolUse-Bank-v0", "--agent", "oracle", "--limit", 3)
    assert out.returncode == 0 and "seal eval: 100%" in out.stderr and "episode/s" in out.stderr
    quiet = seal("eval", "seal/ToolUse-Bank-v0", "--agent", "oracle", "--limit", 3, "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_progress_bar_callback(capsys):
    from seal_trl.training.progress import progress_bar

    update = progress_bar("work", "step")
    for done in range(1, 4):
        update(done, 3)
    update(3, 3)  # a closing call after the end draws nothing more
    err = capsys.readouterr().err
    assert "work: 100%" in err and err.count("3/3") == 1 and "step" in err
    quiet = progress_bar("work", "step", quiet=True)
    quiet(1, 1)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, fragment", [
    (["show", "--bogus"], "seal show --help"),
    (["envs", "--bogus"], "unrecognized arguments: --bogus (`seal envs --help`"),
    (["train", "--algorithm", "ppo"], "invalid choice: 'ppo'"),
    (["eval", "seal/ToolUse-Bank-v0", "--agent", "oracle", "--limit", "0"], "--limit: must be at least 1"),
    (["nosuch"], "invalid choice: 'nosuch'"),
])
def test_a_usage_error_is_one_error_line_and_exit_2(argv, fragment, capsys):
    from seal_cli.main import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("seal: error: ") and fragment in err, err
