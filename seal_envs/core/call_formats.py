"""The tool-call spellings of the main open model families, read into calls and written back.

A model answers in the format it was trained on, and a call it writes in its own format must
reach the env as a call, not end the turn as a plain answer. :func:`find_native_calls` reads:

- Hermes / Qwen 2.5 / Qwen 3: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  (read by :mod:`seal_envs.core.calls` itself);
- Qwen3-Coder XML: ``<tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>``
  (also bare ``<function=NAME>...</function>``); values are text, typed by the tool's schema;
- Llama 3.1-3.3: ``<|python_tag|>{"name": ..., "parameters": {...}}``, several separated by ``;``
  (plain JSON without the tag is an ordinary JSON call);
- Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}]`` (v3 and v7 tokenizers) and
  ``[TOOL_CALLS]NAME[ARGS]{...}`` (v11 and later, ``[CALL_ID]id`` allowed before ``[ARGS]``);
- ``<function=NAME>{...}</function>`` (Llama 3.1's custom format, Functionary).

Text that carries one of these markers but does not parse is a ``FormatError`` (a labelled
``format_error`` turn with feedback), never an answer. :data:`CALL_FORMATS` also holds, per
format, the sentence a system prompt uses to ask for it and a spelling of calls in it (what an
oracle or an SFT example writes), so the instructions always match the format in use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .types import ToolCall

#: A call as read from text, before :mod:`seal_envs.core.calls` checks it: ``{"name", "arguments"}``.
RawCall = dict


class CallSyntaxError(ValueError):
    """Text with a tool-call marker that does not parse (``calls.FormatError`` wraps it)."""


_XML_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(</function>|$)", re.DOTALL)
_XML_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(</parameter>|$)", re.DOTALL)
_MISTRAL_V11 = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*[\w\-]*\s*)?\[ARGS\]")
PYTHON_TAG = "<|python_tag|>"
TOOL_CALLS = "[TOOL_CALLS]"
# Tokens some tokenizers mark special that carry a call: decoding must keep them (seal_trl.play.chat).
CALL_MARKER_TOKENS = (PYTHON_TAG, TOOL_CALLS, "[ARGS]", "[CALL_ID]", "<tool_call>", "</tool_call>")


def _typed(value: str, schema: Mapping[str, Any] | None) -> Any:
    """An XML parameter's text as its declared JSON type (Qwen3-Coder writes every value as text)."""
    text = value.strip("\n")
    if not schema or schema.get("type") == "string":
        return text
    try:
        return json.loads(text)
    except RecursionError:  # a value nested past the stack: a format error, as in every other parser
        raise CallSyntaxError("a <parameter=...> value is nested too deep to read") from None
    except ValueError:  # left as text: validation names the parameter and the type it expects
        return text


def parse_xml_function(body: str, schemas: Mapping[str, Mapping[str, Any]] | None = None) -> list[RawCall]:
    """``<function=NAME><parameter=P>value</parameter>...</function>`` blocks (Qwen3-Coder), or
    ``<function=NAME>{json}</function>``."""
    calls = []
    for i, m in enumerate(_XML_FUNCTION.finditer(body)):
        if not m.group(3):
            raise CallSyntaxError(f"<function=...> block {i} is not closed with </function>")
        name, inner = m.group(1).strip(), m.group(2)
        props = ((schemas or {}).get(name) or {}).get("properties", {})
        if inner.strip().startswith(("{", "[")) and "<parameter=" not in inner:  # <function=NAME>{json}</function>
            calls.append({"name": name, "arguments": inner.strip()})
            continue
        args: dict[str, Any] = {}
        for p in _XML_PARAMETER.finditer(inner):
            if not p.group(3):
                raise CallSyntaxError(f"<parameter={p.group(1)}> of {name!r} is not closed with </parameter>")
            args[p.group(1).strip()] = _typed(p.group(2), props.get(p.group(1).strip()))
        if _XML_PARAMETER.sub("", inner).strip():
            raise CallSyntaxError(f"text inside <function={name}> that is not a <parameter=...> block")
        calls.append({"name": name, "arguments": args})
    if not calls:
        raise CallSyntaxError("no <function=NAME>...</function> block")
    return calls


def _json_objects(text: str, separators: str) -> list[Any]:
    """Consecutive JSON values in ``text`` with ``separators`` between them (Llama's ``;``)."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and (text[i].isspace() or text[i] in separators):
            i += 1
        if i == len(text):
            return out
        try:
            value, i = decoder.raw_decode(text, i)
        except (ValueError, RecursionError) as e:
            raise CallSyntaxError(f"not a JSON call ({type(e).__name__}: {str(e)[:80]})") from None
        out.append(value)


def _llama(after: str) -> list[Any]:
    calls = [c for v in _json_objects(after, ";") for c in (v if isinstance(v, list) else [v])]
    if not calls:
        raise CallSyntaxError(f"nothing after {PYTHON_TAG}")
    return calls


def _mistral(after: str) -> list[Any]:
    calls: list[Any] = []
    for part in after.split(TOOL_CALLS):
        if not part.strip():
            continue
        if part.lstrip().startswith("["):  # v3/v7: a JSON list of calls
            for value in _json_objects(part, ""):
                calls.extend(value if isinstance(value, list) else [value])
            continue
        m = _MISTRAL_V11.match(part)
        if m is None:
            raise CallSyntaxError(f"{TOOL_CALLS} is followed by neither a JSON list nor NAME[ARGS]{{...}}")
        values = _json_objects(part[m.end():], "")
        if len(values) != 1:
            raise CallSyntaxError(f"{m.group(1)}[ARGS] is followed by {len(values)} JSON values, not one object")
        calls.append({"name": m.group(1), "arguments": values[0]})
    if not calls:
        raise CallSyntaxError(f"nothing after {TOOL_CALLS}")
    return calls


def find_native_calls(text: str, schemas: Mapping[str, Mapping[str, Any]] | None = None
                      ) -> tuple[list[Any], str] | None:
    """The raw calls in ``text`` written in a model family's own format and the text before them,
    ``None`` when it has no marker of one; a :class:`CallSyntaxError` when a marker is there but
    the calls do not parse. ``schemas`` (tool name -> parameters) types XML parameter values."""
    for marker, read in ((PYTHON_TAG, _llama), (TOOL_CALLS, _mistral)):
        at = text.find(marker)
        if at >= 0:
            return read(text[at + len(marker):]), text[:at].strip()
    at = text.find("<function=")
    if at >= 0:
        return parse_xml_function(text[at:], schemas), text[:at].strip()
    return None


# -- formats a prompt can ask for -----------------------------------------------------------
def _hermes(calls: Sequence[ToolCall]) -> str:
    return "\n".join("<tool_call>" + json.dumps({"name": c.name, "arguments": dict(c.arguments)}, ensure_ascii=False)
                     + "</tool_call>" for c in calls)


def _qwen3_coder(calls: Sequence[ToolCall]) -> str:
    def value(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

    return "\n".join("<tool_call>\n<function=" + c.name + ">\n" + "".join(
        f"<parameter={k}>\n{value(v)}\n</parameter>\n" for k, v in c.arguments.items()) + "</function>\n</tool_call>"
        for c in calls)


def _llama_spelling(calls: Sequence[ToolCall]) -> str:
    return PYTHON_TAG + "; ".join(json.dumps({"name": c.name, "parameters": dict(c.arguments)}, ensure_ascii=False)
                                  for c in calls)


def _mistral_spelling(calls: Sequence[ToolCall]) -> str:
    return TOOL_CALLS + json.dumps([{"name": c.name, "arguments": dict(c.arguments)} for c in calls], ensure_ascii=False)


def _function_tag(calls: Sequence[ToolCall]) -> str:
    return "".join(f"<function={c.name}>{json.dumps(dict(c.arguments), ensure_ascii=False)}</function>" for c in calls)


@dataclass(frozen=True)
class CallFormat:
    """How a prompt asks for calls (``instruction``, the system prompt's sentence; ``example``,
    the format-error feedback's) and how calls are spelled in it (``spell``)."""

    name: str
    instruction: str
    example: str
    spell: Callable[[Sequence[ToolCall]], str] | None


CALL_FORMATS: dict[str, CallFormat] = {f.name: f for f in (
    CallFormat("hermes", 'Call tools with <tool_call>{"name": "...", "arguments": {...}}</tool_call> blocks. ',
               'Write a call as <tool_call>{"name": "...", "arguments": {...}}</tool_call>, or answer in plain text.',
               _hermes),
    CallFormat("qwen3_coder", "Call tools with <tool_call><function=NAME><parameter=NAME>value</parameter>"
               "</function></tool_call> blocks. ",
               "Write a call as <tool_call><function=NAME><parameter=NAME>value</parameter></function></tool_call>, "
               "or answer in plain text.", _qwen3_coder),
    CallFormat("llama3", 'Call tools with <|python_tag|>{"name": "...", "parameters": {...}}, several separated by ; . ',
               'Write a call as <|python_tag|>{"name": "...", "parameters": {...}}, or answer in plain text.',
               _llama_spelling),
    CallFormat("mistral", 'Call tools with [TOOL_CALLS][{"name": "...", "arguments": {...}}]. ',
               'Write a call as [TOOL_CALLS][{"name": "...", "arguments": {...}}], or answer in plain text.',
               _mistral_spelling),
    CallFormat("function_tag", "Call tools with <function=NAME>{...arguments as JSON...}</function>. ",
               "Write a call as <function=NAME>{...arguments as JSON...}</function>, or answer in plain text.",
               _function_tag),
    # the model's chat template renders the tools and says how to call them: the prompt defers to it
    CallFormat("chat_template", "Call tools in the tool-call format your chat template describes. ",
               "Write a call in the tool-call format of your chat template, or answer in plain text.", None),
)}


def call_format(name: str) -> CallFormat:
    try:
        return CALL_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown call format {name!r}; the formats are {', '.join(CALL_FORMATS)}") from None


# -- tools in the system message (a server or a chat template that drops ``tools``) ------------
#: The tool block of the Qwen 2.5 / Qwen 3 (Hermes) chat templates, as they render it after the
#: system text: what a model trained on that format reads, so the wording is theirs, not ours.
#: :mod:`seal_envs.bfcl.prompt` builds BFCL's Qwen prompt from the same text.
TOOLS_HEADER = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
HERMES_TOOLS_FOOTER = ('\n</tools>\n\nFor each function call, return a json object with function name and arguments '
                       'within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
                       '"arguments": <args-json-object>}\n</tool_call>')


def prompt_call_format(fmt: CallFormat | str | None) -> CallFormat:
    """The format a text prompt can ask for: ``chat_template`` (no spelling of its own, it defers
    to a template that is not there) and ``None`` become Hermes, the default."""
    fmt = call_format(fmt) if isinstance(fmt, str) else fmt
    return fmt if fmt is not None and fmt.spell is not None else CALL_FORMATS["hermes"]


def tools_block(tools: Sequence[Mapping[str, Any]], fmt: CallFormat | str | None = None) -> str:
    """``tools`` as a tool-calling chat template renders them into the system message: Qwen's
    ``<tools>`` block with one JSON schema a line, closed by how to write a call in ``fmt``
    (Qwen's own sentence for Hermes; for the others, one call spelled in the format)."""
    fmt = prompt_call_format(fmt)
    body = TOOLS_HEADER + "".join(f"\n{json.dumps(t)}" for t in tools)
    if fmt.name == "hermes":
        return body + HERMES_TOOLS_FOOTER
    example = fmt.spell([ToolCall("<function-name>", {"<parameter>": "<value>"})])
    return body + f"\n</tools>\n\nWrite each function call in this format:\n{example}"


def _spelled_calls(raw: Sequence[Mapping[str, Any]], fmt: CallFormat) -> str:
    calls = []
    for call in raw:
        fn = call.get("function", call) if isinstance(call, Mapping) else {}
        arguments = fn.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {}
        calls.append(ToolCall(str(fn.get("name", "")), arguments if isinstance(arguments, Mapping) else {}))
    return fmt.spell(calls)


def tools_in_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None,
                    fmt: CallFormat | str | None = None) -> list[dict[str, str]]:
    """``messages`` (the env's ``info["messages"]``) as plain-text chat for a model whose server
    or template drops ``tools``: the tool block (:func:`tools_block`) after the system text, every
    assistant call spelled in ``fmt`` inside its message's text, and each run of tool results one
    user message of ``<tool_response>`` blocks, as Qwen's template renders them. Only ``system``,
    ``user`` and ``assistant`` text is left, which every chat template renders."""
    fmt = prompt_call_format(fmt)
    rest = list(messages)
    system = ""
    if rest and rest[0]["role"] == "system":
        system = rest.pop(0).get("content") or ""
    if tools:
        system = f"{system}\n\n{tools_block(tools, fmt)}" if system else tools_block(tools, fmt)
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    results_at = -1  # index in ``out`` of the user message that holds the current run of tool results
    for m in rest:
        content = m.get("content") or ""
        if m["role"] == "tool":
            block = f"<tool_response>\n{content}\n</tool_response>"
            if results_at == len(out) - 1 and results_at >= 0:
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block})
                results_at = len(out) - 1
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            spelled = _spelled_calls(m["tool_calls"], fmt)
            content = f"{content}\n{spelled}" if content else spelled
        out.append({"role": m["role"], "content": content})
    return out
