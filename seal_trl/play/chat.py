"""Token ids of a conversation and of what the environment appends to it, through a chat template.

A multi-turn rollout keeps *one* token sequence per episode: the prompt, then for every turn the
tokens the model generated and the tokens of the environment's reply (tool results, feedback, the
next user message, the next assistant header). The model's own tokens are kept as generated (they
are what the loss trains); only the environment's part is rendered by the template.

How the environment's part is found (:meth:`ChatRenderer.delta_ids`): render the conversation up
to and including the assistant message as the env recorded it (``base``) and the whole
conversation with the generation prompt (``full``), then take the ids after ``base``:

(``base`` ends at the assistant's end-of-turn token: what follows it, e.g. Qwen's newline, is
never generated, so it belongs to the environment's part)

1. token level: ``ids(full)`` starts with ``ids(base)`` (true for prefix-stable templates such as
   the tiny one) -> the rest of ``ids(full)``;
2. text level: ``text(full)`` starts with ``text(base)`` -> tokenize the text suffix alone;
3. otherwise (templates that rewrite earlier turns, e.g. drop reasoning): render the delta
   messages after a dummy user message and a content-free assistant message, as TRL does for
   tool suffixes.

Tools are rendered with the list the episode started with (so the prompt stays a prefix); when
the env's tool list changes mid-episode, :func:`tools_note` adds a system message that shows the
new list.

:class:`Transcript` is the one place that turns an episode's ``info`` dicts into these ids; the
training rollout and the evaluation agent both use it (with :func:`make_renderer`), so a policy is
evaluated on exactly the token ids it was trained on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from seal_envs.core.call_formats import CALL_MARKER_TOKENS
from seal_envs.openai_agent import TOOLS_IN_PROMPT

__all__ = ["ActionDecoder", "ChatRenderer", "Transcript", "make_renderer", "tools_note"]

Message = Mapping[str, Any]


class ActionDecoder:
    """A completion's ids as the action ``env.step`` reads.

    A tokenizer that ships a ``response_template`` parses its own model's output (transformers'
    ``parse_response``, given the prompt as ``prefix``): the action is the assistant message it
    returns (``content`` and ``tool_calls``); output its template cannot parse goes to the env as
    text, which labels it. Otherwise the action is the text, with special tokens (end of turn,
    padding) dropped except the ones that carry a tool call (Llama's ``<|python_tag|>``,
    Mistral's ``[TOOL_CALLS]`` and ``[ARGS]``,
    :data:`~seal_envs.core.call_formats.CALL_MARKER_TOKENS`): ``skip_special_tokens=True`` would
    drop those too, and the call would reach the env as bare JSON, or as text that is no call at
    all. A tokenizer whose markers are not special tokens (the tiny one, Qwen's ``<tool_call>``)
    decodes exactly as before."""

    MESSAGE_KEYS = ("content", "tool_calls")

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        special = set(tokenizer.all_special_ids)
        for token_id, token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
            if getattr(token, "special", False):
                special.add(token_id)
        vocab = tokenizer.get_vocab()
        markers = {vocab[t] for t in CALL_MARKER_TOKENS if t in vocab} & special
        self.drop = frozenset(special - markers)
        self.keeps_markers = bool(markers)
        self.parses = bool(getattr(tokenizer, "response_template", None))  # the caller passes the prompt then

    def __call__(self, ids: Sequence[int], prefix: Sequence[int] | None = None) -> str | dict[str, Any]:
        if prefix is not None and self.parses:
            decode = self.tokenizer.decode
            try:  # on text: control tokens in the template match as spelled
                message = self.tokenizer.parse_response(decode(list(ids), skip_special_tokens=False),
                                                        prefix=decode(list(prefix), skip_special_tokens=False))
            except Exception:  # noqa: BLE001 - model output the template cannot parse: the env labels the text
                message = None
            if isinstance(message, dict):
                return {"role": "assistant", **{k: message[k] for k in self.MESSAGE_KEYS if message.get(k) is not None}}
        return self.text(ids)

    def text(self, ids: Sequence[int]) -> str:
        if not self.keeps_markers:
            return self.tokenizer.decode(ids, skip_special_tokens=True)
        return self.tokenizer.decode([i for i in ids if i not in self.drop], skip_special_tokens=False)


def tools_note(tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """A system message announcing the tool list (used when it changes during an episode)."""
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return {"role": "system", "content": f"The available tools changed. Tools now:\n{lines}"}


class ChatRenderer:
    """Render messages with ``tokenizer``'s chat template and tokenize them without extra specials.

    ``end_tokens`` are the texts of the tokens that end an assistant turn (EOS). Where a template
    puts only whitespace after one (Qwen: ``<|im_end|>\n``), the environment's part starts right
    after it, because generation stops at that token and the whitespace was never generated.
    """

    def __init__(self, tokenizer: Any, chat_template_kwargs: Mapping[str, Any] | None = None,
                 end_tokens: Sequence[str] = ()) -> None:
        self.tokenizer = tokenizer
        self.kwargs = dict(chat_template_kwargs or {})
        eos = getattr(tokenizer, "eos_token", None)
        self.end_tokens = tuple(t for t in (*end_tokens, *([eos] if isinstance(eos, str) else [])) if t)
        self.fallbacks = {"token": 0, "text": 0, "messages": 0}  # which path computed each delta

    def text(self, messages: Sequence[Message], tools: Sequence[Message] | None, generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            list(messages), tools=list(tools) if tools else None, tokenize=False,
            add_generation_prompt=generation_prompt, **self.kwargs,
        )

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, messages: Sequence[Message], tools: Sequence[Message] | None) -> list[int]:
        """Ids of the conversation so far followed by the assistant generation prompt."""
        return self.encode(self.text(messages, tools, generation_prompt=True))

    def _turn_end(self, base_text: str) -> str:
        """``base_text`` cut right after the assistant's end token when only whitespace follows it."""
        for token in self.end_tokens:
            at = base_text.rfind(token)
            if at >= 0 and not base_text[at + len(token):].strip():
                return base_text[: at + len(token)]
        return base_text

    def delta_ids(self, history: Sequence[Message], assistant: Message, new: Sequence[Message],
                  tools: Sequence[Message] | None) -> list[int]:
        """Ids the template places after ``assistant``'s end token for ``new`` messages plus the generation prompt."""
        base_text = self._turn_end(self.text([*history, assistant], tools, generation_prompt=False))
        full_text = self.text([*history, assistant, *new], tools, generation_prompt=True)
        base, full = self.encode(base_text), self.encode(full_text)
        if full[: len(base)] == base:
            self.fallbacks["token"] += 1
            return full[len(base):]
        if full_text.startswith(base_text):
            self.fallbacks["text"] += 1
            return self.encode(full_text[len(base_text):])
        self.fallbacks["messages"] += 1
        return self._isolated_delta(assistant, new, tools)

    def _isolated_delta(self, assistant: Message, new: Sequence[Message], tools: Sequence[Message] | None) -> list[int]:
        # Like TRL's tool-suffix rendering: an assistant without content (its calls kept, since some templates
        # render tool results by the call that produced them) so content rewriting cannot differ.
        stub = {"role": "assistant", "content": ""}
        if assistant.get("tool_calls"):
            stub["tool_calls"] = assistant["tool_calls"]
        dummy = [{"role": "user", "content": "dummy"}, stub]
        base_text = self._turn_end(self.text(dummy, tools, generation_prompt=False))
        full_text = self.text([*dummy, *new], tools, generation_prompt=True)
        if not full_text.startswith(base_text):
            raise ValueError(
                "the chat template renders an assistant message differently when messages follow it, so the "
                "environment's reply cannot be tokenized as a suffix; use a prefix-stable template"
            )
        return self.encode(full_text[len(base_text):])


def make_renderer(tokenizer: Any, eos_ids: Sequence[int], chat_template_kwargs: Mapping[str, Any] | None = None
                  ) -> ChatRenderer:
    """The renderer for a policy that stops at ``eos_ids`` (their texts end an assistant turn)."""
    ends = [tokenizer.convert_ids_to_tokens(i) for i in sorted(eos_ids)] \
        if hasattr(tokenizer, "convert_ids_to_tokens") else []
    return ChatRenderer(tokenizer, chat_template_kwargs, end_tokens=[e for e in ends if e])


class Transcript:
    """One episode's conversation as token ids: the prompt, then per turn the model's ids as generated
    and what the environment appends (see :meth:`env_ids`).

    ``info`` is the env's ``reset`` info; ``eos_ids`` are the ids that end a turn (a turn cut by the
    token limit is closed with the tokenizer's EOS, as the template would render it).
    ``render_tools=False``: the template gets no ``tools`` (the messages already carry them as text,
    :func:`seal_envs.core.call_formats.tools_in_prompt`); a changed tool list still gets its note.
    """

    def __init__(self, renderer: ChatRenderer, info: Mapping[str, Any], eos_ids: Sequence[int],
                 render_tools: bool = True) -> None:
        self.renderer = renderer
        self.eos_ids = set(eos_ids)
        messages, tools = list(info["new_messages"]), list(info.get("tools") or [])
        self.tools = tools if render_tools else []  # the tool list rendered into the prompt
        self.prompt_ids = renderer.prompt_ids(messages, self.tools)
        self.history = messages  # messages as rendered into the ids
        self.seen_tools = tools  # the last tool list shown (the prompt or a tools note)

    def closing_ids(self, model_ids: Sequence[int]) -> list[int]:
        """The end-of-turn token a turn needs after ``model_ids`` (none when the model emitted one)."""
        return [] if model_ids and model_ids[-1] in self.eos_ids else [self.renderer.tokenizer.eos_token_id]

    def reply_ids(self, info: Mapping[str, Any]) -> list[int]:
        """Ids of the env's messages since the last action (and the next generation prompt); advances the history."""
        assistant, *new = info["new_messages"]
        tools = list(info["tools"]) if "tools" in info else self.seen_tools
        if tools != self.seen_tools:
            new.insert(0, tools_note(tools))
            self.seen_tools = tools
        ids = self.renderer.delta_ids(self.history, assistant, new, self.tools)
        self.history.extend([assistant, *new])
        return ids


# -- tools the chat template drops: the tool list as text in the system message (issue 32) ---------


def template_tools_probe(renderer: Any) -> Any:
    """Whether the chat template renders ``tools``: the probe conversation of
    :func:`seal_envs.openai_agent.probe_tools` rendered with and without its tool, in tokens.
    Free (no model call), so every agent asks at start."""
    from seal_envs.openai_agent import PROBE_MESSAGES, PROBE_TOOL, ToolsProbe

    try:
        without = len(renderer.prompt_ids(list(PROBE_MESSAGES), None))
        with_ = len(renderer.prompt_ids(list(PROBE_MESSAGES), [PROBE_TOOL]))
    except Exception as e:  # noqa: BLE001 - a template that raises on tools refuses them
        return ToolsProbe("rejects", detail=f"{type(e).__name__}: {str(e)[:160]}", who="the chat template")
    verdict = "renders" if with_ > without else "ignores" if with_ == without else "unknown"
    return ToolsProbe(verdict, with_, without, "" if verdict != "unknown" else "fewer tokens with the tool",
                      who="the chat template")


def choose_tools_in_prompt(renderer: Any, mode: str) -> tuple[Any, bool]:
    """``(probe, put the tools in the prompt)``: ``always``, ``never``, or ``auto``, which puts them
    there when the template drops ``tools`` (a model with no tool block in its template is blind
    to the tools otherwise). The HF agent and the training rollout decide the same way."""
    if mode not in TOOLS_IN_PROMPT:
        raise ValueError(f"tools_in_prompt must be one of {', '.join(TOOLS_IN_PROMPT)}, got {mode!r}")
    probe = template_tools_probe(renderer)
    return probe, mode == "always" or (mode == "auto" and probe.server_drops_tools)


def text_tools_info(env: Any, info: Mapping[str, Any], seen: int) -> dict[str, Any]:
    """``info`` as a template without tools must see it: the episode's conversation with the tools
    in its system message and calls as text in the env's call format
    (:func:`seal_envs.core.call_formats.tools_in_prompt`), from message ``seen`` on."""
    from seal_envs.core.call_formats import tools_in_prompt

    base = env.unwrapped
    converted = tools_in_prompt(base.messages, base.tools, getattr(base, "call_format", None))
    return {"new_messages": converted[seen:], **({"tools": info["tools"]} if "tools" in info else {})}
