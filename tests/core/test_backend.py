"""The answer every backend gives to a call of a tool that does not exist or is not available yet."""

from seal_envs.core.backend import unavailable
from seal_envs.core.types import ToolCall

TOOLS = ("get_balance", "transfer", "set_alert")


def test_an_available_tool_may_run():
    assert unavailable(ToolCall("transfer", {}), TOOLS, None) is None
    assert unavailable(ToolCall("transfer", {}), TOOLS, ["transfer"]) is None


def test_unknown_tool_suggests_only_tools_the_agent_may_call_now():
    event = unavailable(ToolCall("get_balanc", {}), TOOLS, None)
    assert (event.kind, event.hint) == ("unknown_tool", "did you mean 'get_balance'?")
    hidden = unavailable(ToolCall("get_balanc", {}), TOOLS, ["transfer"])  # get_balance is not shown yet
    assert hidden.kind == "unknown_tool" and hidden.hint is None


def test_a_known_tool_that_is_not_shown_yet_is_unavailable():
    event = unavailable(ToolCall("set_alert", {}), TOOLS, ["transfer"])
    assert event.kind == "unavailable_tool" and "not available now" in event.message
