"""Issue 32: a server that drops the request's ``tools`` leaves the model blind. The project's fake
server, taught to render, ignore or refuse ``tools`` and to leave out ``usage``: the probe's
verdict, the fall-back to tools in the system message (calls read from the answer's text), and
what eval.json records."""

import json
import re

import pytest

from seal_envs.core.call_formats import CALL_FORMATS, TOOLS_HEADER, tools_block, tools_in_prompt
from seal_envs.core.types import ToolCall
from seal_envs.eval import evaluate
from seal_envs.openai_agent import OpenAIBatchAgent, OpenAIChatAgent, ToolsProbe, probe_tools
from test_openai_agent import _seal_eval, answer, is_probe, serve  # noqa: F401  (serve: the fixture)


def fake_model(tools: str = "render", usage: bool = True):
    """A server in front of a scripted model. ``tools``: ``render`` (the template shows the
    request's tools: they count as prompt tokens and the model answers structured ``tool_calls``),
    ``ignore`` (dropped without a word: the model sees only the messages) or ``reject`` (HTTP 400
    for a request with tools). The model calls get_balance on the account its last user message
    names when it can see a tool, in whichever way it saw it: the ``tools`` field, or a ``<tools>``
    block in the system message (then it writes the call as Hermes text); else it answers in text."""
    seen: list[dict] = []

    def behave(h):
        if h.command == "GET":
            return answer(b'{"data": []}')(h)
        body = json.loads(h.body)
        seen.append(body)
        if tools == "reject" and "tools" in body:
            return answer(b'{"error": {"message": "tools are not supported by this chat template"}}', 400)(h)
        messages = body["messages"]
        shown = tools == "render" and bool(body.get("tools"))
        rendered = json.dumps(messages) + (json.dumps(body["tools"]) if shown else "")
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        last = messages[-1]
        account = re.search(r"ACC-\d+", last.get("content") or "")
        asked = last["role"] == "user" and not last["content"].startswith("<tool_response>") and account
        if asked and shown:
            message = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "get_balance", "arguments": json.dumps({"account_id": account.group()})}}]}
        elif asked and "<tools>" in system:
            message = {"role": "assistant", "content": '<tool_call>{"name": "get_balance", "arguments": '
                       f'{{"account_id": "{account.group()}"}}}}</tool_call>'}
        else:
            message = {"role": "assistant", "content": "Here you are."}
        out = {"choices": [{"message": message}]}
        if usage:
            out["usage"] = {"prompt_tokens": len(rendered) // 4, "completion_tokens": 1}
        answer(json.dumps(out).encode())(h)

    behave.seen = seen
    return behave


@pytest.mark.parametrize("tools, usage, verdict", [
    ("render", True, "renders"), ("ignore", True, "ignores"), ("reject", True, "rejects"),
    ("render", False, "unknown"), ("ignore", False, "unknown")])
def test_the_probe_tells_what_the_server_does_with_tools(serve, tools, usage, verdict):
    model = fake_model(tools, usage)
    server = serve(model)
    probe = probe_tools(OpenAIChatAgent(server.url, "m", retries=0, timeout=5))
    assert probe.verdict == verdict, probe
    assert len(model.seen) == 2 and all(is_probe(b) for b in model.seen)
    assert ["tools" in b for b in model.seen] == [False, True]  # the same request, then with one tool
    if verdict == "ignores":
        assert probe.with_tools == probe.without_tools and f"{probe.with_tools} prompt tokens" in probe.finding()
    if verdict == "renders":
        assert probe.with_tools > probe.without_tools
    if verdict == "rejects":
        assert "HTTP 400" in probe.detail and "not supported" in probe.detail
    if verdict == "unknown":
        assert "no usage.prompt_tokens" in probe.detail
    assert probe.server_drops_tools == (verdict in ("ignores", "rejects"))


def test_a_server_that_is_down_makes_the_probe_unknown_not_an_error():
    from test_openai_agent import closed_port_url

    probe = probe_tools(OpenAIChatAgent(closed_port_url(), "m", retries=0, timeout=2))
    assert probe.verdict == "unknown" and "probe request failed" in probe.detail


def _tool_calls(result) -> int:
    return sum(len(m.get("tool_calls") or []) for e in result.episodes for m in e["transcript"])


@pytest.mark.parametrize("tools", ["ignore", "reject"])
def test_auto_puts_the_tools_in_the_system_message_when_the_server_drops_them(serve, tools):
    model = fake_model(tools)
    server = serve(model)
    blind = evaluate("seal/ToolUse-Bank-v0", OpenAIBatchAgent(server.url, "m", tools_in_prompt="never", retries=0),
                     split="test", limit=4, batch_size=4)
    assert blind.agent_info["tools_sent_in"] == "tools_field"
    if tools == "ignore":  # the model never saw a tool: every episode a plain-text answer
        assert _tool_calls(blind) == 0
    else:  # every request refused: each episode ends with the server's error
        assert all("HTTP 400" in e["agent_error"] for e in blind.episodes)
    model.seen.clear()
    agent = OpenAIBatchAgent(server.url, "m", retries=0)  # tools_in_prompt="auto", the default
    seeing = evaluate("seal/ToolUse-Bank-v0", agent, split="test", limit=4, batch_size=4)
    assert seeing.agent_info == {"tools_in_prompt": "auto", "tools_sent_in": "system_message",
                                 "tools_probe": agent.tools_probe.to_dict()}
    assert agent.tools_probe.verdict == ("ignores" if tools == "ignore" else "rejects")
    episode_requests = [b for b in model.seen if not is_probe(b)]
    assert len(model.seen) - len(episode_requests) == 2  # one probe for the whole evaluation
    for body in episode_requests:  # no tools field; the tools are text in the system message
        assert "tools" not in body and TOOLS_HEADER in body["messages"][0]["content"]
        assert {m["role"] for m in body["messages"]} <= {"system", "user", "assistant"}
        assert all(isinstance(m["content"], str) for m in body["messages"])
    assert not any(e.get("agent_error") for e in seeing.episodes)
    assert _tool_calls(seeing) >= 4  # the calls written as text reached the env as calls
    # the call the model wrote goes back to it as text in its own format, its result as a <tool_response>
    later = [b for b in episode_requests if len(b["messages"]) > 2]
    assert later and any(m["content"].startswith("<tool_call>") for b in later for m in b["messages"]
                         if m["role"] == "assistant")
    assert any(m["content"].startswith("<tool_response>") for b in later for m in b["messages"] if m["role"] == "user")


def test_a_server_that_renders_tools_keeps_them_in_the_tools_field(serve):
    model = fake_model("render")
    server = serve(model)
    result = evaluate("seal/ToolUse-Bank-v0", OpenAIBatchAgent(server.url, "m", retries=0), split="test", limit=2)
    assert result.agent_info["tools_sent_in"] == "tools_field" and result.agent_info["tools_probe"]["verdict"] == "renders"
    assert all(b.get("tools") for b in model.seen if not is_probe(b))
    assert _tool_calls(result) >= 2


def test_without_usage_auto_keeps_the_tools_field_and_says_it_cannot_tell(serve):
    server = serve(fake_model("ignore", usage=False))
    agent = OpenAIBatchAgent(server.url, "m", retries=0)
    assert not agent.prompt_tools and agent.tools_probe.verdict == "unknown"
    line = agent.tools_line()
    assert "cannot tell" in line and "`tools` field" in line and "--tools-in-prompt always" in line
    forced = OpenAIBatchAgent(server.url, "m", tools_in_prompt="always", retries=0)
    assert forced.prompt_tools and "system message" in forced.tools_line()


def test_a_lone_agent_probes_once_and_only_when_it_must_decide(serve):
    import gymnasium as gym

    model = fake_model("ignore")
    server = serve(model)
    env = gym.make("seal/ToolUse-Bank-v0", split="test", call_format="llama3")
    _, info = env.reset(seed=0, options={"index": 0})
    agent = OpenAIChatAgent(server.url, "m", retries=0)
    agent.act(env, info)
    action = agent.act(env, info)
    assert action.startswith("<tool_call>")  # text, as the model wrote it: the env reads the call from it
    assert [is_probe(b) for b in model.seen] == [True, True, False, False]
    assert agent.tools_probe.verdict == "ignores" and agent.prompt_tools
    system = model.seen[-1]["messages"][0]["content"]
    assert "<|python_tag|>" in system.rpartition("</tools>")[2]  # the env's call format, not Hermes
    model.seen.clear()
    for mode in ("never", "always"):
        OpenAIChatAgent(server.url, "m", tools_in_prompt=mode, retries=0).act(env, info)
    assert not any(map(is_probe, model.seen)) and "tools" in model.seen[0] and "tools" not in model.seen[1]
    given = OpenAIChatAgent(server.url, "m", tools_probe=ToolsProbe("renders", 80, 20))
    assert given.decide_tools() is False  # a probe handed in (by the batch agent) is not asked again
    with pytest.raises(ValueError, match="tools_in_prompt must be one of auto, always, never"):
        OpenAIChatAgent(server.url, "m", tools_in_prompt="sometimes")


def test_tools_in_prompt_writes_what_a_tool_calling_template_would():
    tools = [{"type": "function", "function": {"name": "get_balance", "parameters": {"type": "object"}}}]
    messages = [{"role": "system", "content": "Be careful."}, {"role": "user", "content": "ACC-1?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "get_balance", "arguments": '{"account_id": "ACC-1"}'}},
                    {"id": "b", "type": "function", "function": {"name": "get_balance", "arguments": "not json"}}]},
                {"role": "tool", "tool_call_id": "a", "name": "get_balance", "content": '{"balance": 3}'},
                {"role": "tool", "tool_call_id": "b", "name": "get_balance", "content": "Error"},
                {"role": "assistant", "content": "It is 3."}, {"role": "user", "content": "Thanks"}]
    out = tools_in_prompt(messages, tools)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert out[0]["content"] == "Be careful.\n\n" + tools_block(tools, "hermes")
    assert out[0]["content"].endswith('"arguments": <args-json-object>}\n</tool_call>')  # Qwen's own sentence
    assert out[2]["content"] == ('<tool_call>{"name": "get_balance", "arguments": {"account_id": "ACC-1"}}</tool_call>\n'
                                 '<tool_call>{"name": "get_balance", "arguments": {}}</tool_call>')
    assert out[3]["content"] == '<tool_response>\n{"balance": 3}\n</tool_response>\n<tool_response>\nError\n</tool_response>'
    assert messages[2]["content"] == "" and len(messages) == 7  # the env's messages are left as they were
    # every format with a spelling closes the block with a call in it; chat_template has none: Hermes
    for name, fmt in CALL_FORMATS.items():
        block = tools_block(tools, name)
        assert block.startswith(TOOLS_HEADER) and json.dumps(tools[0]) in block
        if fmt.spell is not None and name != "hermes":
            example = fmt.spell([ToolCall("<function-name>", {"<parameter>": "<value>"})])
            assert block.endswith("\n" + example), (name, block[-200:])
    assert tools_block(tools, "chat_template") == tools_block(tools, "hermes")
    assert tools_in_prompt(messages[:2], []) == messages[:2]  # no tools: nothing added


@pytest.mark.slow
def test_seal_eval_says_where_the_tools_went_and_records_it(serve, tmp_path):
    server = serve(fake_model("ignore"))
    done, _ = _seal_eval(f"openai:{server.url}#m", "--quiet", "--out", str(tmp_path / "auto"))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [x for x in done.stderr.splitlines() if x.startswith("[seal eval] tools:")]
    assert len(lines) == 1 and "ignores `tools`" in lines[0] and "system message as hermes text" in lines[0], done.stderr
    data = json.loads((tmp_path / "auto" / "eval.json").read_text(encoding="utf-8"))
    assert data["agent_info"]["tools_sent_in"] == "system_message" and data["agent_info"]["tools_in_prompt"] == "auto"
    assert data["agent_info"]["tools_probe"]["verdict"] == "ignores"
    assert "Tools went in the system message" in (tmp_path / "auto" / "eval.md").read_text(encoding="utf-8")
    done, _ = _seal_eval(f"openai:{server.url}#m", "--quiet", "--tools-in-prompt", "never", "--out", str(tmp_path / "never"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the model sees no tool: --tools-in-prompt auto" in done.stderr
    data = json.loads((tmp_path / "never" / "eval.json").read_text(encoding="utf-8"))
    assert data["agent_info"]["tools_sent_in"] == "tools_field" and data["agent_info"]["tools_in_prompt"] == "never"
    bad, _ = _seal_eval(f"openai:{server.url}#m", "--tools-in-prompt", "sometimes")
    assert bad.returncode == 2 and "invalid choice: 'sometimes'" in bad.stderr
