"""Model text is parsed as data and dispatched to whitelisted methods: nothing is evaluated."""

import ast
import pathlib

import pytest

pytest.importorskip("bfcl_eval")

import seal_envs.bfcl
from seal_envs.core.types import ToolCall
from seal_envs.registration import make_bfcl_env as make_env

PAYLOADS = [
    "__import__('os').system('touch {marker}')",
    "[cd(folder=__import__('os').system('touch {marker}'))]",
    "[ls(a=True), exec(\"open('{marker}', 'w')\")]",
    "cd(folder='.'); __import__('os').system('touch {marker}')",
    "<tool_call>{{\"name\": \"__import__\", \"arguments\": {{\"name\": \"os\"}}}}</tool_call>",
    "[_load_scenario(scenario={{}})]",
    "[__init__()]",
    "[cd.__globals__(x=1)]",
    "```python\nimport os; os.system('touch {marker}')\n```",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_does_not_run(payload, tmp_path):
    marker = tmp_path / "pwned"
    env = make_env(split="all")
    env.reset(options={"task_id": "multi_turn_base_0"})
    before = env.unwrapped.backend.comparable_state()
    _, reward, terminated, truncated, info = env.step(payload.format(marker=marker))
    assert not marker.exists()
    tools = env.unwrapped.specs
    assert all(e["kind"] != "ok" or e["tool"] in tools for e in info["events"])
    assert info["step_label"]["label"] in ("format_error", "unknown_tool", "ok")
    after = env.unwrapped.backend.comparable_state()
    assert {k: v for k, v in after.items() if k != "_responses"} == {k: v for k, v in before.items() if k != "_responses"}


def test_private_and_dunder_methods_are_not_tools():
    env = make_env(split="all").unwrapped
    env.reset(options={"task_id": "multi_turn_base_0"})
    assert env.backend.owners and not any(name.startswith("_") for name in env.backend.owners)
    for name in ("__init__", "__class__", "_load_scenario"):  # attributes of the instance, never dispatched to
        assert env.backend.execute(ToolCall(name, {})).kind == "unknown_tool"


def test_package_has_no_eval_or_exec():
    root = pathlib.Path(seal_envs.bfcl.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("eval", "exec", "compile", "__import__"), f"{path.name}: {node.func.id}"


def test_a_result_too_big_to_print_is_a_tool_error_not_a_crash():
    from seal_envs.bfcl.backend import BFCLBackend
    from seal_envs.core.types import ToolCall

    backend = BFCLBackend({"involved_classes": ["MathAPI"], "initial_config": {}})
    event = backend.execute(ToolCall("power", {"base": 2**200, "exponent": 1000}))
    assert event.kind == "tool_error" and backend.responses[-1].startswith("Error during execution: Exceeds")


@pytest.mark.parametrize("tool, args, param", [
    ("power", {"base": 7, "exponent": 10**7}, "exponent"),
    ("power", {"base": 7, "exponent": -10**7}, "exponent"),
    ("logarithm", {"value": 7, "base": 3, "precision": 10**5}, "precision"),
    ("square_root", {"number": 2, "precision": 10**5}, "precision"),
    ("round_number", {"number": 5, "decimal_places": -10**7}, "decimal_places"),
])
def test_costly_math_arguments_are_bounded_schema_violations(tool, args, param):
    import time

    from seal_envs.bfcl.backend import BFCLBackend
    from seal_envs.core.types import ToolCall

    backend = BFCLBackend({"involved_classes": ["MathAPI"], "initial_config": {}})
    start = time.perf_counter()
    event = backend.execute(ToolCall(tool, args))
    assert time.perf_counter() - start < 0.5
    assert (event.kind, event.param) == ("schema_violation", param)
    assert "maximum of 1000" in event.message or "minimum of -1000" in event.message


def test_math_calls_leave_no_process_wide_precision():
    import decimal

    import mpmath

    from seal_envs.bfcl.backend import BFCLBackend
    from seal_envs.core.types import ToolCall

    backend = BFCLBackend({"involved_classes": ["MathAPI"], "initial_config": {}})
    dps, prec = mpmath.mp.dps, decimal.getcontext().prec
    log = backend.execute(ToolCall("logarithm", {"value": 7, "base": 3, "precision": 200}))
    root = backend.execute(ToolCall("square_root", {"number": 2, "precision": 300}))
    assert log.ok and root.ok
    assert len(backend.responses[-2]) > 150 and len(backend.responses[-1]) > 250  # the asked precision held
    assert (mpmath.mp.dps, decimal.getcontext().prec) == (dps, prec)
