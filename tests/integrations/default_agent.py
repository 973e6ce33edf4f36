"""The shipped default agent (``hf:default``) as the generation engine the framework adapters
are tested against: greedy ids for prompt ids (verl's ``server_manager``, OpenRLHF's engine) and a
local OpenAI-compatible chat server (verifiers). Greedy, so every run plays the same episode."""

from __future__ import annotations

import http.server
import json
import threading
from functools import lru_cache
from pathlib import Path

CHECKPOINT = Path(__file__).resolve().parents[2] / "seal_trl" / "agent" / "checkpoints" / "default"
MAX_NEW_TOKENS = 64  # the provenance's evaluation budget (seal_trl.agent.checkpoint.EVAL_SETTINGS)
ENV_KWARGS = {"domains": ("bank",), "max_steps": 12}  # what the agent was evaluated on
PROVENANCE = json.loads((CHECKPOINT / "provenance.json").read_text())
PASSED = PROVENANCE["check"]["passed_task_ids"]  # test tasks the agent solves greedily


@lru_cache(maxsize=1)
def load():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)
    model = AutoModelForCausalLM.from_pretrained(CHECKPOINT).eval()
    return model, tokenizer


def generate(prompt_ids: list[int], max_new_tokens: int = MAX_NEW_TOKENS) -> list[int]:
    """Greedy completion ids (ending with EOS when the model stopped)."""
    import torch

    model, tokenizer = load()
    with torch.no_grad():
        out = model.generate(torch.tensor([list(prompt_ids)]), attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                             max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
    return out[0, len(prompt_ids):].tolist()


def chat(messages: list[dict], tools: list[dict] | None = None) -> str:
    """The assistant's reply text for an OpenAI chat request."""
    _, tokenizer = load()
    text = tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=True)
    ids = generate(tokenizer(text, add_special_tokens=False)["input_ids"])
    return tokenizer.decode(ids, skip_special_tokens=True)


USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


class ChatServer:
    """``POST /v1/chat/completions`` (plain or streamed) and ``GET /v1/models`` on loopback, answered by :func:`chat`."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "default", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests.append(body)
                messages = [{"role": m["role"], "content": m.get("content") or ""} | (
                    {"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {}) for m in body["messages"]]
                content = chat(messages, body.get("tools"))
                head = {"id": f"chatcmpl-{len(outer.requests)}", "created": 0, "model": body.get("model", "default")}
                if not body.get("stream"):
                    self._send(200, {**head, "object": "chat.completion",
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": content}}],
                                     "usage": USAGE})
                    return
                chunks = [{"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": None},
                          {"index": 0, "delta": {}, "finish_reason": "stop"}]
                events = [{**head, "object": "chat.completion.chunk", "choices": [c]} for c in chunks]
                if (body.get("stream_options") or {}).get("include_usage"):
                    events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": USAGE})
                data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data.encode())))
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class StandInChannel:
    """A stand-in for issue 28a's ``SurfaceChannel`` (same ``publish``/``latest`` API, one process
    only): the lead swaps in the real one at merge."""

    def __init__(self) -> None:
        from seal_envs.core.surface import CANONICAL

        self.surface = CANONICAL
        self.reads = 0

    def publish(self, surface) -> int:
        self.surface = surface
        return surface.version

    def latest(self):
        self.reads += 1
        return self.surface
