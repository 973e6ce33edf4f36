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

:func:`check_server` is a one-request pre-flight (``GET {base_url}/models``) that turns a server
that is down, a wrong address or a refused key into one :class:`OpenAIError` before any episode
starts, instead of one failed episode per task after its retries.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping

from seal_envs.eval import PerEpisodeAgents

MAX_RESPONSE_BYTES = 16 << 20
DEFAULT_CONCURRENCY = 16  # requests in flight: seal eval's default --batch-size, so a whole batch at once

__all__ = ["DEFAULT_CONCURRENCY", "OpenAIBatchAgent", "OpenAIChatAgent", "OpenAIError", "check_server",
           "parse_openai_spec"]


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


class OpenAIChatAgent:
    """One episode's agent; ``seed`` is sent as the request's ``seed`` (servers that honour it
    sample reproducibly), so trials of the same task differ only through it."""

    OPTIONS = ("api_key", "temperature", "max_tokens", "timeout", "retries", "extra_body")

    def __init__(self, base_url: str, model: str, *, seed: int | None = None, api_key: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None, timeout: float = 120.0,
                 retries: int = 2, extra_body: Mapping[str, Any] | None = None):
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

    def reset(self) -> None:
        pass

    def request_body(self, env: Any) -> dict[str, Any]:
        """The request for the next action: the whole conversation and the tools shown now."""
        base = env.unwrapped
        body: dict[str, Any] = {"model": self.model, "messages": base.messages}
        if base.tools:
            body["tools"] = base.tools
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

    def act(self, env: Any, info: Mapping[str, Any]) -> dict[str, Any]:
        """The assistant message for the conversation in ``info``."""
        response = self._post(self.request_body(env))
        self.calls += 1
        choices = response.get("choices")
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise OpenAIError(f"{self.url} answered without choices[0].message: {str(response)[:300]}")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise OpenAIError(f"{self.url} answered a message whose content is a {type(content).__name__}")
        out: dict[str, Any] = {"role": "assistant", "content": content or ""}
        tool_calls = message.get("tool_calls")
        if tool_calls:
            if not isinstance(tool_calls, list):
                raise OpenAIError(f"{self.url} answered tool_calls that are a {type(tool_calls).__name__}, not a list")
            out["tool_calls"] = tool_calls  # their shape is the env's to judge: a format_error turn
        return out


class OpenAIBatchAgent(PerEpisodeAgents):
    """A batch agent (:class:`seal_envs.eval.BatchAgent`) over one :class:`OpenAIChatAgent` per
    episode: ``start(seeds)`` makes them (episode ``i`` sends ``seeds[i]`` as its ``seed``) and
    ``act_batch`` sends the requests of all active episodes at once, at most ``concurrency`` in
    flight. Each request keeps every guard of :meth:`OpenAIChatAgent.act` (its own whole-request
    ``timeout``, retries, bounded answer, same-origin redirects); one that still fails ends only
    its own episode, with ``agent_error`` in that episode's record. ``options`` are
    :attr:`OpenAIChatAgent.OPTIONS`. In an asyncio program, ``await agent.act_batch_async(...)``."""

    def __init__(self, base_url: str, model: str, *, concurrency: int = DEFAULT_CONCURRENCY, **options: Any):
        unknown = set(options) - set(OpenAIChatAgent.OPTIONS)
        if unknown:
            raise TypeError(f"unknown OpenAIChatAgent option(s): {', '.join(sorted(unknown))}")
        super().__init__(lambda seed: OpenAIChatAgent(base_url, model, seed=seed, **options), concurrency)
        self.name = f"openai:{base_url}#{model}"

    @property
    def calls(self) -> int:
        """Requests answered in the current batch, all episodes together."""
        return sum(a.calls for a in self.agents)
