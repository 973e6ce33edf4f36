"""BFCL's Qwen function-calling prompt as text: what bfcl-eval's ``QwenFCHandler._format_prompt``
builds (the official SEAL run trains with it). The tools go in the system turn inside
``<tools></tools>``, calls come back as ``<tool_call>`` JSON, tool results go back in one user turn
of ``<tool_response>`` blocks, and the prompt ends with the assistant header.

Pair it with ``prompt_format="qwen_fc"`` (no system line of the env's own; a surface note, such as
observation-lite's, becomes the system text before the tool block) and the default Hermes call
format. A Qwen tokenizer's own chat template given ``tools=info["tools"]`` renders the same turns.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from seal_envs.core.call_formats import HERMES_TOOLS_FOOTER, TOOLS_HEADER

TOOLS_FOOTER = HERMES_TOOLS_FOOTER + "<|im_end|>\n"  # the template's text, then its end of turn


def _is_tool_response(message: Mapping[str, Any]) -> bool:
    content = message["content"]
    return isinstance(content, str) and content.startswith("<tool_response>") and content.endswith("</tool_response>")


def _assistant(message: Mapping[str, Any], last: bool, after_query: bool) -> str:
    content, reasoning = message["content"] or "", message.get("reasoning_content") or ""
    if not reasoning and "</think>" in content:
        parts = content.split("</think>")
        reasoning, content = parts[0].rstrip("\n").split("<think>")[-1].lstrip("\n"), parts[-1].lstrip("\n")
    if after_query and (last or reasoning):
        text = "<|im_start|>assistant\n<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + content.lstrip("\n")
    else:
        text = f"<|im_start|>assistant\n{content}"
    calls = message.get("tool_calls") or []
    for call in calls:
        if (call == calls[0] and content) or call != calls[0]:  # as bfcl-eval compares: a repeat of the first call gets no newline
            text += "\n"
        call = call.get("function", call)
        arguments = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
        text += '<tool_call>\n{"name": "' + call["name"] + '", "arguments": ' + arguments + "}\n</tool_call>"
    return text + "<|im_end|>\n"


def qwen_fc_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> str:
    """The prompt text for ``messages`` (the env's ``info["messages"]``) and ``tools`` (printed one
    JSON object a line, as given), through the assistant header of the next turn."""
    out = ""
    if tools:
        out += "<|im_start|>system\n" + (messages[0]["content"] + "\n\n" if messages and messages[0]["role"] == "system" else "")
        out += TOOLS_HEADER + "".join(f"\n{json.dumps(t)}" for t in tools) + TOOLS_FOOTER
    elif messages and messages[0]["role"] == "system":
        out += f"<|im_start|>system\n{messages[0]['content']}<|im_end|>\n"
    last_query = next((i for i in range(len(messages) - 1, -1, -1)
                       if messages[i]["role"] == "user" and not _is_tool_response(messages[i])), len(messages) - 1)
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "user" or (role == "system" and i != 0):
            out += f"<|im_start|>{role}\n{m['content']}<|im_end|>\n"
        elif role == "assistant":
            out += _assistant(m, i == len(messages) - 1, i > last_query)
        elif role == "tool":
            before = messages[i - 1]["role"] if i > 0 else None
            after = messages[i + 1]["role"] if i < len(messages) - 1 else None
            out += ("<|im_start|>user" if before != "tool" else "") + f"\n<tool_response>\n{m['content']}\n</tool_response>"
            out += "<|im_end|>\n" if after != "tool" else ""
    return out + "<|im_start|>assistant\n"
