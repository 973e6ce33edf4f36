"""An agent that asks any OpenAI-compatible chat-completions server (vLLM, SGLang, llama.cpp,
Ollama, OpenAI...) for the next action, with the standard library only (``urllib``).

Each step POSTs ``{base_url}/chat/completions`` with the conversation (``env.unwrapped.messages``) and
the tools shown (``env.unwrapped.tools``) and hands the assistant message it gets back (``content`` and
``tool_calls``) to ``env.step`` as an OpenAI-style message dict, which the env parses.

    agent = OpenAIChatAgent("http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B")
    reward, info, actions = run_episode(env, agent, seed=0)

On the command line: ``seal eval seal/ToolUse-v0 --agent openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B``.
The API key, if the server needs one, comes from ``api_key`` or the ``OPENAI_API_KEY`` variable.

:class:`OpenAIBatchAgent` is the batch agent :func:`seal_envs.eval.evaluate` gets for that spec:
one :class:`OpenAIChatAgent` per episode (its seed, its own request body), and the requests of all
running episodes of a lockstep batch in flight together, at most ``concurrency`` at once (an
asyncio gather over a thread pool running the same blocking request as ``act``; no dependency
beyond the standard library). A request that fails ends only its own episode.

    result = evaluate("seal/ToolUse-v0", OpenAIBatchAgent(url, "Qwen/Qwen3-8B", concurrency=16), batch_size=16)

Whatever the server does, the agent raises only :class:`OpenAIError`: connection faults, HTTP
5xx and 429, and ``http.client`` protocol errors are retried (``retries``); an answer that is
not UTF-8, not JSON, larger than ``MAX_RESPONSE_BYTES``, nested too deep or not shaped like a
completion is refused. ``timeout`` bounds the whole request, not each socket read (a server
that trickles bytes cannot hold a step forever). A redirect is followed only to the same
scheme, host and port: the ``Authorization`` header never goes to another host.

Not every server shows the model the request's ``tools``: vLLM needs a tool parser, llama.cpp and
Ollama render them only for some chat templates, and a model served with a template that has no
tool block reads none of them (docs/cli.md has a table). :func:`probe_tools` asks once, with the
same short request with and without one tool, whether ``usage.prompt_tokens`` grows; with
``tools_in_prompt="auto"`` (the default) a server that ignores or refuses ``tools`` gets them in
the system message instead, written as a tool-calling chat template writes them, in the env's
call format (:func:`seal_envs.core.call_formats.tools_in_prompt`), and the calls are read from
the answer's text, as the env reads every format. ``"always"`` and ``"never"`` decide without
asking. :class:`OpenAIBatchAgent` probes once per evaluation whatever the mode and records the
finding (:meth:`OpenAIBatchAgent.eval_record`, ``eval.json``'s ``agent_info``).

:func:`check_server` is a one-request pre-flight (``GET {base_url}/models``) that turns a server
that is down, a wrong address or a refused key into one :class:`OpenAIError` before any episode
starts, instead of one failed episode per task after its retries.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping

from seal_envs.core.call_formats import CallFormat, prompt_call_format, tools_in_prompt

from seal_envs.agents import PerEpisodeAgents

_LOG = logging.getLogger(__name__)
MAX_RESPONSE_BYTES = 16 << 20
DEFAULT_CONCURRENCY = 16  # requests in flight: seal eval's default --batch-size, so a whole batch at once

TOOLS_IN_PROMPT = ("auto", "always", "never")

__all__ = ["DEFAULT_CONCURRENCY", "PROBE_MESSAGES", "TOOLS_IN_PROMPT", "OpenAIBatchAgent", "OpenAIChatAgent",
           "OpenAIError", "ToolsProbe", "check_server", "parse_openai_spec", "probe_tools"]


class OpenAIError(RuntimeError):
    """The server could not be reached or answered with something that is not a completion."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only within the origin of the request: credentials stay on that host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if _origin(newurl) != _origin(req.full_url):
            raise OpenAIError(f"{req.full_url} redirected to another host ({newurl}); not followed, so the "
                              "API key is not sent there. Use the final URL as the base url.")
        if code in (307, 308) and req.get_method() == "POST":  # urllib refuses these for a POST: resend it as is
            return urllib.request.Request(newurl, data=req.data, headers=dict(req.header_items()), method="POST")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameOriginRedirects)


def _read_bounded(response, deadline: float, url: str) -> bytes:
    """The body, read in chunks with the socket's timeout cut to what is left of the deadline."""
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the whole request took longer than the timeout")
        if sock is not None:
            sock.settimeout(left)
        chunk = response.read1(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise OpenAIError(f"{url} answered more than {MAX_RESPONSE_BYTES} bytes")
        chunks.append(chunk)


def _decode(raw: bytes, url: str) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise OpenAIError(f"{url} answered bytes that are not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise OpenAIError(f"{url} did not answer with JSON ({e.msg} at char {e.pos})") from None
    except (ValueError, RecursionError) as e:
        raise OpenAIError(f"{url} answered JSON this agent cannot read ({type(e).__name__}: {str(e)[:100]})") from None
    if not isinstance(data, dict):
        raise OpenAIError(f"{url} answered a JSON {type(data).__name__}, not a completion object")
    return data


def parse_openai_spec(spec: str) -> tuple[str, str]:
    """``openai:<base url>#<model>`` -> ``(base url, model)``."""
    body = spec[len("openai:"):] if spec.startswith("openai:") else spec
    base, sep, model = body.partition("#")  # a url has no use for "#"; a model name might
    if not sep or not base or not model:
        raise ValueError(f"an OpenAI agent is written openai:<base url>#<model>, got {spec!r}")
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"the base url must start with http:// or https://, got {base!r}")
    return base, model


def check_server(base_url: str, api_key: str | None = None, timeout: float = 10.0) -> None:
    """Raise :class:`OpenAIError` if the server at ``base_url`` cannot be reached or refuses the
    key; return quietly otherwise.

    Why: an evaluation of 200 episodes against a server that is down would otherwise spend each
    episode's retries before it says so. One cheap ``GET {base_url}/models`` (every OpenAI-style
    server we know has it; it costs no tokens) answers the questions that are the same for every
    episode. A 404 or any other non-auth status is *not* an error here, since not every server
    serves ``/models``: the chat requests themselves are the judge of the rest. ``api_key``
    defaults to ``OPENAI_API_KEY``, as for the agent.
    """
    base = base_url.rstrip("/")
    base = base[: -len("/chat/completions")] if base.endswith("/chat/completions") else base
    url = base + "/models"
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with _OPENER.open(urllib.request.Request(url, headers=headers, method="GET"), timeout=timeout):
            return
    except urllib.error.HTTPError as e:  # the server is up and answered
        if e.code in (401, 403):
            try:
                detail = e.read(300).decode(errors="replace").strip()
            except Exception:  # noqa: BLE001 - the body of an error is a courtesy
                detail = ""
            what = ("refused the API key" if key else "needs an API key and none was sent")
            raise OpenAIError(f"the server at {base} {what} (HTTP {e.code} for GET {url}"
                              f"{': ' + detail if detail else ''}); set OPENAI_API_KEY to a key it accepts") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:  # refused, DNS, timeout, TLS, reset
        reason = getattr(e, "reason", None) or e
        raise OpenAIError(f"cannot reach the server at {base} (GET {url} within {timeout:g} s: "
                          f"{type(reason).__name__}: {reason}); is it running, and are the scheme, host, port "
                          "and path (often /v1) of the base url right?") from None


# -- does the server show the model the request's tools? -----------------------------------
#: The probe's conversation: short, so two requests cost a few dozen prompt tokens and one new token.
PROBE_MESSAGES = ({"role": "user", "content": "What time is it in Paris?"},)
PROBE_TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "The current local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city."}},
                   "required": ["city"]}}}


@dataclass(frozen=True)
class ToolsProbe:
    """What :func:`probe_tools` found. ``verdict``: ``renders`` (more prompt tokens with the tool),
    ``ignores`` (the same count: the template dropped it), ``rejects`` (the request with tools was
    refused, HTTP 4xx, and the one without was not) or ``unknown`` (no ``usage`` in the answer, an
    odd count, or a failed request; ``detail`` says which)."""

    verdict: str
    with_tools: int | None = None
    without_tools: int | None = None
    detail: str = ""
    who: str = "the server"  # what was asked: an HF agent asks its chat template


    @property
    def server_drops_tools(self) -> bool:
        return self.verdict in ("ignores", "rejects")

    def finding(self) -> str:
        """The finding in words, for the one line a run prints."""
        if self.verdict == "renders":
            return (f"{self.who} renders `tools` ({self.without_tools} prompt tokens without one tool, "
                    f"{self.with_tools} with it)")
        if self.verdict == "ignores":
            return f"{self.who} ignores `tools` ({self.with_tools} prompt tokens with and without one tool)"
        if self.verdict == "rejects":
            return f"{self.who} refuses requests with `tools` ({self.detail})"
        return f"cannot tell whether {self.who} renders `tools` ({self.detail})"

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "prompt_tokens_with_tools": self.with_tools,
                "prompt_tokens_without_tools": self.without_tools, "detail": self.detail}


def _prompt_tokens(response: Mapping[str, Any]) -> int | None:
    usage = response.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else None


def probe_tools(agent: "OpenAIChatAgent") -> ToolsProbe:
    """Ask ``agent``'s server the same one-line question twice, without and with one tool, for one
    new token each, and compare ``usage.prompt_tokens``: a template that renders tools makes the
    prompt longer. Never raises: a request that fails makes the verdict ``unknown`` (or ``rejects``
    when only the request with tools is refused), and the episodes meet the fault themselves.

    Why tokens and not the answer: one token says nothing, and a model that ignores a tool it was
    shown looks the same as one that was never shown it; the prompt's length is the server's own
    account of what it rendered."""
    body = {"model": agent.model, "messages": list(PROBE_MESSAGES), "max_tokens": 1, **agent.extra_body}
    body.pop("tools", None)
    try:
        without = _prompt_tokens(agent._post(body))
    except OpenAIError as e:
        return ToolsProbe("unknown", detail=f"the probe request failed: {str(e)[:200]}")
    try:
        with_ = _prompt_tokens(agent._post(body | {"tools": [PROBE_TOOL]}))
    except OpenAIError as e:
        status = str(e).partition(" answered HTTP ")[2][:3]
        if status.isdigit() and 400 <= int(status) < 500 and status != "429":
            return ToolsProbe("rejects", without_tools=without, detail=f"HTTP {status} for the request with "
                              f"tools: {str(e).partition(': ')[2][:160]}")
        return ToolsProbe("unknown", without_tools=without, detail=f"the probe request failed: {str(e)[:200]}")
    if with_ is None or without is None:
        return ToolsProbe("unknown", with_, without, "the server's answers carry no usage.prompt_tokens")
    if with_ > without:
        return ToolsProbe("renders", with_, without)
    if with_ == without:
        return ToolsProbe("ignores", with_, without)
    return ToolsProbe("unknown", with_, without, "fewer prompt tokens with the tool than without")


def tools_line(probe: ToolsProbe | None, mode: str, in_prompt: bool, fmt: CallFormat | None = None,
               native: str = "the request's `tools` field") -> str:
    """The one line a run says about tools: what the probe found and where the tools go
    (``native``: where they go when not in the prompt)."""
    where = (f"so the tools go in the system message as {prompt_call_format(fmt).name} text and calls are read "
             "from the answer's text" if in_prompt else f"so the tools go in {native}")
    why = {"always": " (--tools-in-prompt always)", "never": " (--tools-in-prompt never)"}.get(mode, "")
    found = "not probed" if probe is None else probe.finding()
    hint = ""
    if mode == "never" and probe is not None and probe.server_drops_tools:
        hint = "; the model sees no tool: --tools-in-prompt auto puts them in the prompt"
    elif mode == "auto" and probe is not None and probe.verdict == "unknown":
        hint = "; if the model never calls a tool, pass --tools-in-prompt always"
    return f"tools: {found}, {where}{why}{hint}"



def conversation_of(source: Any) -> tuple[Any, Any]:
    """``(messages, tools)`` of an env (the whole conversation and the tools it shows now, read-only
    values of :mod:`seal_envs.core.frozen`) or of a mapping that holds them."""
    base = getattr(source, "unwrapped", None)
    if base is not None and hasattr(base, "messages"):
        return base.messages, base.tools
    return source["messages"], source.get("tools")


class OpenAIChatAgent:
    """One episode's agent; ``seed`` is sent as the request's ``seed`` (servers that honour it
    sample reproducibly), so trials of the same task differ only through it.

    ``tools_in_prompt`` (``auto``, ``always``, ``never``) says where the tools go; with ``auto``
    and no ``tools_probe`` given, the first request that has tools runs :func:`probe_tools` first
    (a lone agent probes only when it must decide; :class:`OpenAIBatchAgent` probes once for all
    its episodes and hands the result on)."""

    OPTIONS = ("api_key", "temperature", "max_tokens", "timeout", "retries", "extra_body", "tools_in_prompt")

    def __init__(self, base_url: str, model: str, *, seed: int | None = None, api_key: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None, timeout: float = 120.0,
                 retries: int = 2, extra_body: Mapping[str, Any] | None = None, tools_in_prompt: str = "auto",
                 tools_probe: ToolsProbe | None = None):
        if tools_in_prompt not in TOOLS_IN_PROMPT:
            raise ValueError(f"tools_in_prompt must be one of {', '.join(TOOLS_IN_PROMPT)}, got {tools_in_prompt!r}")
        base = base_url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.model = model
        self.seed = seed
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.retries = retries
        self.extra_body = dict(extra_body or {})
        self.calls = 0
        self.tools_in_prompt = tools_in_prompt
        self.tools_probe = tools_probe
        self.prompt_tools: bool | None = ({"always": True, "never": False}.get(tools_in_prompt)
                                          if tools_in_prompt != "auto" or tools_probe is None
                                          else tools_probe.server_drops_tools)

    def decide_tools(self) -> bool:
        """Whether the tools go in the system message (probing the server first if ``auto`` has
        not decided yet)."""
        if self.prompt_tools is None:
            self.tools_probe = probe_tools(self)
            self.prompt_tools = self.tools_probe.server_drops_tools
        return self.prompt_tools

    def reset(self) -> None:
        pass

    def request_body(self, source: Any, call_format: CallFormat | str | None = None) -> dict[str, Any]:
        """The request for the next action in ``source`` (an env: its whole conversation and the
        tools it shows now; or a mapping with ``messages`` and ``tools``): as they are, or (tools in
        the prompt) the messages as plain text with the tools and the calls written in
        ``call_format`` (the env's; Hermes for ``None``) and no ``tools`` field."""
        messages, tools = conversation_of(source)
        if tools and self.decide_tools():
            body: dict[str, Any] = {"model": self.model, "messages": tools_in_prompt(messages, tools, call_format)}
        else:
            body = {"model": self.model, "messages": messages}
            if tools:
                body["tools"] = tools
        for key in ("seed", "temperature", "max_tokens"):
            if getattr(self, key) is not None:
                body[key] = getattr(self, key)
        return body | self.extra_body

    def _post(self, body: Mapping[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=True).encode()  # ASCII: lone surrogates cannot break encoding
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            deadline = time.monotonic() + self.timeout
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    return _decode(_read_bounded(response, deadline, self.url), self.url)
            except OpenAIError:
                raise
            except urllib.error.HTTPError as e:
                try:
                    detail = e.read(500).decode(errors="replace")
                except Exception:  # noqa: BLE001 - the body of an error is a courtesy
                    detail = ""
                last = OpenAIError(f"{self.url} answered HTTP {e.code}: {detail}")
                if e.code < 500 and e.code != 429:
                    raise last from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as e:  # OSError: timeouts, resets
                last = OpenAIError(f"cannot reach {self.url}: {type(e).__name__}: {getattr(e, 'reason', e)}")
            if attempt < self.retries:
                time.sleep(min(0.5 * 2 ** attempt, 4.0))
        raise last  # type: ignore[misc]

    def act(self, env: Any, info: Mapping[str, Any]) -> dict[str, Any] | str:
        """The assistant message for the conversation in ``info`` (with the tools in the prompt and
        no ``tool_calls`` in the answer: its text, which the env reads calls from)."""
        call_format = getattr(getattr(env, "unwrapped", None), "call_format", None)
        source = env if env is not None else info  # no env (a bare call): the conversation in info
        response = self._post(self.request_body(source, call_format if isinstance(call_format, CallFormat) else None))
        self.calls += 1
        choices = response.get("choices")
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise OpenAIError(f"{self.url} answered without choices[0].message: {str(response)[:300]}")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise OpenAIError(f"{self.url} answered a message whose content is a {type(content).__name__}")
        tool_calls = message.get("tool_calls")
        if not tool_calls and self.prompt_tools:
            # the calls are in the text: handed over as text, the env keeps it in the transcript even
            # when it does not parse, so the model reads back what it wrote with the format error
            return content or ""
        out: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if tool_calls:
            if not isinstance(tool_calls, list):
                raise OpenAIError(f"{self.url} answered tool_calls that are a {type(tool_calls).__name__}, not a list")
            out["tool_calls"] = tool_calls  # their shape is the env's to judge: a format_error turn
        return out


class OpenAIBatchAgent(PerEpisodeAgents):
    """A batch agent (:class:`seal_envs.agents.BatchAgent`) over one :class:`OpenAIChatAgent` per
    episode: ``start(seeds)`` makes them (episode ``i`` sends ``seeds[i]`` as its ``seed``) and
    ``act_batch`` sends the requests of all active episodes at once, at most ``concurrency`` in
    flight. Each request keeps every guard of :meth:`OpenAIChatAgent.act` (its own whole-request
    ``timeout``, retries, bounded answer, same-origin redirects); one that still fails ends only
    its own episode, with ``agent_error`` in that episode's record. ``options`` are
    :attr:`OpenAIChatAgent.OPTIONS`. In an asyncio program, ``await agent.act_batch_async(...)``.

    The first ``start`` runs :func:`probe_tools` once (:meth:`probe`; in every mode, so the run
    records what the server does) and logs :meth:`tools_line`; every episode then sends the tools
    where ``tools_in_prompt`` and the probe say, and :meth:`eval_record` is what
    :func:`seal_envs.eval.evaluate` stores in ``eval.json``."""

    def __init__(self, base_url: str, model: str, *, concurrency: int = DEFAULT_CONCURRENCY, **options: Any):
        unknown = set(options) - set(OpenAIChatAgent.OPTIONS)
        if unknown:
            raise TypeError(f"unknown OpenAIChatAgent option(s): {', '.join(sorted(unknown))}")
        self.mode = options.pop("tools_in_prompt", "auto")
        self._probe_agent = OpenAIChatAgent(base_url, model, tools_in_prompt=self.mode, **options)  # checks the mode
        self.tools_probe: ToolsProbe | None = None
        super().__init__(lambda seed: OpenAIChatAgent(base_url, model, seed=seed, tools_probe=self.tools_probe,
                                                      tools_in_prompt=self._episode_mode(), **options), concurrency)
        self.name = f"openai:{base_url}#{model}"

    def probe(self) -> ToolsProbe:
        """The server's :class:`ToolsProbe`, asked for once (later calls return it)."""
        if self.tools_probe is None:
            self.tools_probe = probe_tools(self._probe_agent)
            blind = self.tools_probe.server_drops_tools and self.mode == "never"
            _LOG.log(logging.WARNING if blind or self.tools_probe.verdict == "unknown" else logging.INFO,
                     "%s", self.tools_line())
        return self.tools_probe

    @property
    def prompt_tools(self) -> bool:
        """Whether the episodes put the tools in the system message (probes if it must)."""
        if self.mode != "auto":
            return self.mode == "always"
        return self.probe().server_drops_tools

    def _episode_mode(self) -> str:
        return "always" if self.prompt_tools else "never"

    def tools_line(self, call_format: CallFormat | None = None) -> str:
        """One line: what the probe found and where the tools go."""
        return tools_line(self.probe(), self.mode, self.prompt_tools, call_format)

    def eval_record(self) -> dict[str, Any]:
        """What ``eval.json`` keeps of this agent's run (``agent_info``)."""
        return {"tools_in_prompt": self.mode, "tools_sent_in": "system_message" if self.prompt_tools else "tools_field",
                "tools_probe": self.probe().to_dict()}

    def start(self, seeds) -> None:
        self.probe()
        super().start(seeds)

    @property
    def calls(self) -> int:
        """Requests answered in the current batch, all episodes together."""
        return sum(a.calls for a in self.agents)
