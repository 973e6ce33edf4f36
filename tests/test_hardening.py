"""Issue 30, a hostile corpus's second round: each defect it reproduced, pinned at its root.

The BFCL file-system bounds are in ``tests/bfcl/test_bfcl_state_bounds.py``, nesting at depths
10 to 100,000 in every call format in ``tests/test_nesting_fuzz.py``.
"""

import json
import os
import subprocess
import sys
from collections.abc import Mapping

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401  (registers the ids)
from seal_envs.core import statefile
from seal_envs.core.calls import MAX_ACTION_CHARS, FormatError, parse_action
from seal_envs.core.surface import CANONICAL, SurfacePatch
from seal_envs.core.types import ToolCall
from seal_envs.core.validation import schema_typed

BANK = "seal/ToolUse-Bank-v0"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"}


def bank_env():
    env = gym.make(BANK).unwrapped
    env.reset(seed=0)
    return env, next(iter(env.backend.state["accounts"]))


def label(info) -> str:
    return info["step_label"]["label"]


# -- 3. a typed <parameter=...> value nested past the stack ----------------------------------
@pytest.mark.parametrize("env_id", seal_envs.registered_ids())
def test_a_qwen3_coder_value_nested_1000_deep_is_a_format_error(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    tool, param = next((t, p) for t, s in sorted(env.specs.items()) for p, sub in s.parameters["properties"].items()
                       if sub.get("type") not in (None, "string"))
    nested = "[" * 1000 + "]" * 1000
    for action in (f"<tool_call><function={tool}><parameter={param}>{nested}</parameter></function></tool_call>",
                   f"<function={tool}><parameter={param}>{nested}</parameter></function>"):
        _, _, _, _, info = env.step(action)
        assert label(info) == "format_error" and "nested" in info["step_label"]["detail"]


# -- 4. a failed first reset under Gymnasium's env checker ------------------------------------
@pytest.mark.parametrize("checker", [True, False])
def test_a_failed_reset_leaves_the_env_usable(checker):
    env = gym.make(BANK, disable_env_checker=not checker)
    with pytest.raises(ValueError, match="not a task id"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(RuntimeError, match="call reset"):  # no episode runs: not the old one, not a half-made one
        env.step("hello")
    env.reset(seed=0)
    for _ in range(3):  # the checker's first and second step (each compares data), then a plain one
        obs, reward, terminated, truncated, info = env.step("What is my balance?")
        assert isinstance(obs, str) and label(info) in seal_envs.LABELS
        if terminated or truncated:
            env.reset(seed=1)
    with pytest.raises(ValueError):  # and a failure after good resets changes nothing either
        env.reset(options={"task_id": "nope"})
    env.reset(seed=2)
    env.step("hello")


# -- 5. schema-valid arguments a backend could not handle -------------------------------------
def test_an_integer_valued_float_reaches_the_backend_as_an_int():
    env, account = bank_env()
    _, _, _, _, info = env.step({"name": "get_transactions", "arguments": {"account_id": account, "limit": 2.0}})
    assert info["events"][0]["kind"] == "ok" and len(info["events"][0]["result"]) <= 2
    env.reset(seed=0)
    _, _, _, _, info = env.step({"name": "get_transactions", "arguments": {"account_id": account, "limit": 2.5}})
    assert info["events"][0]["kind"] == "schema_violation"


def test_schema_typed_follows_the_schema_only():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"},
                                               "ns": {"type": "array", "items": {"type": "integer"}},
                                               "o": {"type": "object", "properties": {"k": {"type": ["integer", "null"]}}}}}
    out = schema_typed(schema, {"n": 2.0, "x": 2.0, "ns": [1.0, 3.0], "o": {"k": 4.0}, "extra": 5.0})
    assert out == {"n": 2, "x": 2.0, "ns": [1, 3], "o": {"k": 4}, "extra": 5.0}
    assert [type(out[k]) for k in ("n", "x", "extra")] == [int, float, float] and type(out["ns"][0]) is int


@pytest.mark.parametrize("arguments", ['{"path": "%s", "line": "\\ud800"}', '{"path": "%s", "line": "a\\udfffb"}'])
def test_a_lone_surrogate_is_a_format_error_not_an_internal_error(arguments):
    env = gym.make("seal/ToolUse-Files-v0").unwrapped
    env.reset(seed=0)
    path = next(iter(env.backend.state["files"]))
    text = '<tool_call>{"name": "append_to_file", "arguments": %s}</tool_call>' % (arguments % path)
    before = env.backend.comparable_state()
    for action in (text, json.loads(text.removeprefix("<tool_call>").removesuffix("</tool_call>"))):
        _, _, _, _, info = env.step(action)
        assert label(info) == "format_error" and "lone surrogate" in info["step_label"]["detail"]
    assert env.backend.comparable_state() == before
    _, _, _, _, info = env.step({"name": "append_to_file", "arguments": {"path": path, "line": "ok \U0001F600"}})
    assert info["events"][0]["kind"] == "ok"  # a real astral character, from a surrogate pair or not


# -- 6. reset options -------------------------------------------------------------------------
@pytest.mark.parametrize("options, message", [
    ({"task": "bank/train/d2/1"}, "a task id goes in 'task_id'"),
    ("x", "reset options must be a dict"),
    (["task_id"], "reset options must be a dict"),
    ({"task_id": 5}, "'task_id' must be str"),
    ({"index": "3"}, "'index' must be an integer"),
    ({"index": True}, "'index' must be an integer"),
    ({"difficulty": 2.5}, "'difficulty' must be an integer or None"),
    ({"taskid": "bank/train/d2/1"}, r"unknown reset option\(s\) \['taskid'\]"),
])
def test_reset_options_are_checked_with_one_clear_error(options, message):
    env = gym.make(BANK)
    with pytest.raises(ValueError, match=message):
        env.reset(options=options)
    env.reset(options={"index": 3, "split": "train", "domain": None, "difficulty": None})


# -- 7. Python objects in an action -----------------------------------------------------------
class LyingInt(int):
    def bit_length(self):
        return 1

    def __str__(self):
        return "1"


class RaisingStr(str):
    def __str__(self):
        raise RuntimeError("boom")

    def __len__(self):
        return 0


class LyingDict(dict):
    def items(self):
        return iter([("name", "get_balance")])

    def __iter__(self):
        return iter(["name"])


class BrokenMapping(Mapping):
    def __getitem__(self, key):
        raise RuntimeError("boom")

    def __iter__(self):
        return iter(["name"])

    def __len__(self):
        return 1


class EndlessMapping(BrokenMapping):
    def __iter__(self):
        n = 0
        while True:
            n += 1
            yield f"k{n}"

    def __getitem__(self, key):
        return 1


class FakeStr:
    __class__ = str  # isinstance(FakeStr(), str) is True


@pytest.mark.parametrize("value, problem", [
    (LyingInt(10 ** 5000), "integer larger than 256 bits"),
    (LyingInt(2 ** 300), "integer larger than 256 bits"),
    (FakeStr(), "FakeStr is not JSON data"),
    (BrokenMapping(), "cannot be read"),
    (EndlessMapping(), "larger than"),
], ids=["lying-int-5000-digits", "lying-int-300-bits", "fake-str", "broken-mapping", "endless-mapping"])
def test_python_objects_are_measured_as_the_plain_values_they_hold(value, problem):
    env, account = bank_env()
    _, _, _, _, info = env.step({"name": "get_transactions", "arguments": {"account_id": account, "limit": value}})
    assert label(info) == "format_error" and problem in info["step_label"]["detail"]


def test_subclasses_are_read_through_the_builtin_not_their_overrides():
    env, account = bank_env()
    _, _, _, _, info = env.step({"name": "get_transactions",
                                 "arguments": {"account_id": RaisingStr(account), "limit": LyingInt(2)}})
    assert info["events"][0]["kind"] == "ok" and len(info["events"][0]["result"]) <= 2
    assert info["tool_calls"][0]["arguments"] == {"account_id": account, "limit": 2}
    assert [type(v) for v in info["tool_calls"][0]["arguments"].values()] == [str, int]
    # a dict subclass is read from its own storage, whatever its items() or __iter__ says
    parsed = parse_action(LyingDict({"name": "get_balance", "arguments": {"account_id": account}}))
    assert parsed.calls == (ToolCall("get_balance", {"account_id": account}),)
    # a str subclass action: its real length is measured, and its __str__ is never called
    env.reset(seed=0)
    _, _, _, _, info = env.step(RaisingStr("x" * (MAX_ACTION_CHARS + 1)))
    assert label(info) == "format_error" and "characters; the limit is" in info["step_label"]["detail"]
    _, _, _, _, info = env.step(RaisingStr("What is my balance?"))
    assert label(info) != "format_error"


# -- 9. one rule for unknown keys -------------------------------------------------------------
CALL = {"name": "get_balance", "arguments": {"account_id": "x"}}
ENTRY = {"id": "call_1", "type": "function", "function": CALL}


@pytest.mark.parametrize("action", [
    {**CALL, "bogus": 1},
    {**ENTRY, "bogus": 1},
    {**ENTRY, "function": {**CALL, "bogus": 1}},
    [{**ENTRY, "bogus": 1}],
    {"role": "assistant", "content": "", "tool_calls": [{**ENTRY, "bogus": 1}]},
    {"role": "assistant", "content": "", "tool_calls": [{**ENTRY, "function": {**CALL, "bogus": 1}}]},
    {"role": "assistant", "content": "", "bogus": 1, "tool_calls": [ENTRY]},
    "<tool_call>" + json.dumps({**ENTRY, "bogus": 1}) + "</tool_call>",
    json.dumps([{**CALL, "bogus": 1}]),
])
def test_an_unknown_key_is_a_format_error_in_every_call_shape(action):
    with pytest.raises(FormatError, match=r"unexpected key\(s\) \['bogus'\]"):
        parse_action(action)
    env, _ = bank_env()
    _, _, _, _, info = env.step(action)
    assert label(info) == "format_error" and info["events"] == []


def test_the_known_keys_of_every_call_shape_still_parse():
    for action in (CALL, ENTRY, [ENTRY, CALL], {"role": "assistant", "content": None, "refusal": None,
                                                "tool_calls": [ENTRY]},
                   {"name": "get_balance", "parameters": {"account_id": "x"}, "id": "1", "type": "function"}):
        assert parse_action(action).calls == (ToolCall("get_balance", {"account_id": "x"}),) * (
            2 if isinstance(action, list) else 1)


# -- 10. apply_patch(None) --------------------------------------------------------------------
@pytest.mark.parametrize("patch", [None, {"channel": "recovery", "scope": "x", "level": 1}, "recovery"])
def test_apply_patch_refuses_what_is_not_a_patch(patch):
    env = gym.make(BANK).unwrapped
    with pytest.raises(TypeError, match="a patch is a seal_envs.core.surface.SurfacePatch"):
        env.apply_patch(patch)
    with pytest.raises(TypeError, match="SurfacePatch"):
        CANONICAL.apply(patch)
    assert env.apply_patch(SurfacePatch("recovery", "schema_violation", 1)).version == 1


# -- 8. every file the CLI reads, within one set of bounds ------------------------------------
def seal(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "seal_cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


def _one_error_line(out) -> str:
    assert out.returncode == 2, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seal: error: ") and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def test_report_on_deeply_nested_metrics_is_one_error_line(tmp_path):
    for depth in (100, 5000):  # parses, then past the bound; past the parser's own stack
        (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n{"step": 2, "x": %s%s}\n'
                                                % ("[" * depth, "]" * depth))
        line = _one_error_line(seal("report", tmp_path))
        assert "metrics.jsonl:2: nested deeper than 64 levels" in line


@pytest.mark.slow
def test_train_with_a_deep_or_aliased_yaml_config_is_one_error_line(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("steps: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested deeper than 64 levels" in _one_error_line(seal("train", "--config", deep))
    bomb = tmp_path / "bomb.yaml"  # aliases: 10^7 values from a file of a few hundred bytes
    rows = ["a0: &a0 [" + ", ".join(["1"] * 10) + "]"]
    rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 7)]
    bomb.write_text("\n".join(rows) + "\n")
    assert "more than 4000000 values" in _one_error_line(seal("train", "--config", bomb))


@pytest.mark.parametrize("name, body, message", [
    ("deep.json", "[" * 70 + "]" * 70, "nested deeper than 64 levels"),
    ("deeper.json", "[" * 100000 + "]" * 100000, "nested deeper than 64 levels"),
    ("wide.json", "[" + ",".join(["1"] * 50) + "]", "more than 40 values"),
    ("big.json", "[" + " " * 2000 + "]", "larger than 1000 bytes"),
    ("bad.json", "\xff", "not UTF-8"),
    ("ok.json", '{"a": [1, 2, {"b": null}]}', None),
])
def test_every_reader_has_the_same_bounds(tmp_path, monkeypatch, name, body, message):
    monkeypatch.setattr(statefile, "MAX_FILE_BYTES", 1000 if name == "big.json" else statefile.MAX_FILE_BYTES)
    monkeypatch.setattr(statefile, "MAX_FILE_VALUES", 40 if name == "wide.json" else statefile.MAX_FILE_VALUES)
    path = tmp_path / name
    path.write_bytes(body.encode("latin-1") if name == "bad.json" else body.encode())
    (tmp_path / "m.jsonl").write_bytes(path.read_bytes().replace(b"\n", b" ") + b"\n")
    (tmp_path / "c.yaml").write_bytes(path.read_bytes())
    readers = [lambda: statefile.read_json(path, "test"), lambda: statefile.read_json_lines(tmp_path / "m.jsonl", "t"),
               lambda: statefile.read_yaml(tmp_path / "c.yaml", "t")]
    for read in readers:
        if message is None:
            read()
            continue
        with pytest.raises(statefile.StateFileError, match=message):
            read()


# -- the files domain's disk, and the limits table --------------------------------------------
def test_the_files_disk_is_bounded(monkeypatch):
    from seal_envs.domains.files import backend as files

    env = gym.make("seal/ToolUse-Files-v0").unwrapped
    env.reset(seed=0)
    used = sum(map(len, env.backend.state["files"].values()))
    monkeypatch.setattr(files, "MAX_DISK_CHARS", used + 50)
    path = min(env.backend.state["files"], key=lambda p: -len(env.backend.state["files"][p]))  # > 50 characters
    folder = path.rsplit("/", 1)[0]
    before = env.backend.comparable_state()
    for call in ({"name": "write_file", "arguments": {"path": f"{folder}/new.txt", "content": "x" * 51}},
                 {"name": "append_to_file", "arguments": {"path": path, "line": "x" * 50}},
                 {"name": "copy", "arguments": {"source": path, "destination": f"{folder}/copy.txt"}}):
        _, _, _, _, info = env.step(call)
        assert info["events"][0]["kind"] == "tool_error" and "no space left" in info["events"][0]["message"]
    assert env.backend.comparable_state() == before
    _, _, _, _, info = env.step({"name": "write_file", "arguments": {"path": f"{folder}/new.txt", "content": "x" * 49}})
    assert info["events"][0]["kind"] == "ok"


def test_the_limits_table_matches_the_code():
    """docs/architecture.md's Limits table: each bound is its constant's value, and its test exists."""
    import importlib
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "architecture.md").read_text()
    table = doc[doc.index("## Limits"):doc.index("## Tasks and splits")]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith(("| limit", "|---"))]
    assert len(rows) >= 14
    for row in rows:
        _, bound, constant, _, test = [c.strip() for c in row.strip("|").split("|")]
        number = float(re.match(r"[\d,.]+", bound).group().replace(",", ""))
        constant, test = constant.strip("`"), test.strip("`")
        if constant.startswith("tests/"):
            file, name = constant.split("::")
            value = float(re.search(rf"^{name} = ([\d.]+)", (root / file).read_text(), re.M).group(1))
        else:
            module, _, name = constant.rpartition(".")
            try:
                value = getattr(importlib.import_module(module), name)
            except ModuleNotFoundError:  # a class attribute: module.Class.NAME
                module, _, cls = module.rpartition(".")
                if module.startswith("seal_envs.bfcl"):
                    pytest.importorskip("bfcl_eval")
                value = getattr(getattr(importlib.import_module(module), cls), name)
        assert value == number, f"{constant} is {value}, the table says {bound}"
        file, name = test.split("::")
        assert re.search(rf"^def {name}\(", (root / file).read_text(), re.M), f"no test {test}"
