"""An agent that asks any OpenAI-compatible chat-completions server (vLLM, SGLang, llama.cpp,
Ollama, OpenAI...) for the next action, with the standard library only (``urllib``).

Each step POSTs ``{base_url}/chat/completions`` with ``messages=info["messages"]`` and
``tools=info["tools"]`` and hands the assistant message it gets back (``content`` and
``tool_calls``) to ``env.step`` as an OpenAI-style message dict, which the env parses.

    agent = OpenAIChatAgent("http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B")
    reward, info, actions = run_episode(env, agent, seed=0)

On the command line: ``seal eval seal/ToolUse-v0 --agent openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B``.
The API key, if the server needs one, comes from ``api_key`` or the ``OPENAI_API_KEY`` variable.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any, Mapping

__all__ = ["OpenAIChatAgent", "OpenAIError", "parse_openai_spec"]


class OpenAIError(RuntimeError):
    """The server could not be reached or answered with something that is not a completion."""


def parse_openai_spec(spec: str) -> tuple[str, str]:
    """``openai:<base url>#<model>`` -> ``(base url, model)``."""
    body = spec[len("openai:"):] if spec.startswith("openai:") else spec
    base, sep, model = body.partition("#")  # a url has no use for "#"; a model name might
    if not sep or not base or not model:
        raise ValueError(f"an OpenAI agent is written openai:<base url>#<model>, got {spec!r}")
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"the base url must start with http:// or https://, got {base!r}")
    return base, model


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

    def request_body(self, info: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": info["messages"]}
        if info.get("tools"):
            body["tools"] = info["tools"]
        for key in ("seed", "temperature", "max_tokens"):
            if getattr(self, key) is not None:
                body[key] = getattr(self, key)
        return body | self.extra_body

    def _post(self, body: Mapping[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, ensure_ascii=False).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read().decode())
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")[:500]
                last = OpenAIError(f"{self.url} answered HTTP {e.code}: {detail}")
                if e.code < 500 and e.code != 429:
                    raise last from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = OpenAIError(f"cannot reach {self.url}: {getattr(e, 'reason', e)}")
            except json.JSONDecodeError as e:
                raise OpenAIError(f"{self.url} did not answer with JSON: {e}") from None
            if attempt < self.retries:
                time.sleep(0.5 * 2 ** attempt)
        raise last  # type: ignore[misc]

    def act(self, env: Any, info: Mapping[str, Any]) -> dict[str, Any]:
        """The assistant message for the conversation in ``info``."""
        response = self._post(self.request_body(info))
        self.calls += 1
        try:
            message = response["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise OpenAIError(f"{self.url} answered without choices[0].message: {str(response)[:300]}") from None
        out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            out["tool_calls"] = message["tool_calls"]
        return out
