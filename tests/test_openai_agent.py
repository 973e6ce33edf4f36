"""The OpenAI-compatible agent against hostile local servers: every fault is an OpenAIError,
transient ones are retried, the timeout bounds the whole request, credentials stay on their host,
and evaluate() keeps the episodes already played when a call fails."""

import http.server
import json
import socket
import threading
import time

import pytest

from seal_envs.openai_agent import OpenAIChatAgent, OpenAIError

OK = {"choices": [{"message": {"role": "assistant", "content": "Done."}}]}
INFO = {"messages": [{"role": "user", "content": "hi"}], "tools": []}


class Server:
    """A local HTTP server whose handler answers with ``behave(handler)``; records requests."""

    def __init__(self, behave, host="127.0.0.1"):
        self.requests: list[dict] = []
        self.posts: list[tuple[str, bytes]] = []  # (path, body) of each request
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                outer.posts.append((self.path, self.rfile.read(length)))
                outer.requests.append(dict(self.headers))
                behave(self)

        self.httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(body: bytes, status: int = 200, headers=()):
    def behave(h):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return behave


@pytest.fixture
def serve():
    servers = []

    def start(behave, host="127.0.0.1"):
        servers.append(Server(behave, host))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.mark.parametrize("body, fragment", [
    (b"\xff\xfe not utf-8", "not UTF-8"),
    (b"<html>oops</html>", "did not answer with JSON"),
    (b"[" * 100000 + b"]" * 100000, "cannot read"),
    (b"[1, 2]", "a JSON list"),
    (json.dumps({"choices": []}).encode(), "without choices"),
    (json.dumps({"choices": [{"message": "hi"}]}).encode(), "without choices"),
    (json.dumps({"choices": [{"message": {"content": 5}}]}).encode(), "content is a int"),
    (json.dumps({"choices": [{"message": {"content": "", "tool_calls": "x"}}]}).encode(), "not a list"),
])
def test_malformed_answers_are_the_agents_own_error(serve, body, fragment):
    server = serve(answer(body))
    with pytest.raises(OpenAIError, match=fragment):
        OpenAIChatAgent(server.url, "m", retries=0, timeout=5).act(None, INFO)


def test_an_oversized_answer_is_refused(serve, monkeypatch):
    import seal_envs.openai_agent as oa

    monkeypatch.setattr(oa, "MAX_RESPONSE_BYTES", 1000)
    server = serve(answer(b" " * 5000 + json.dumps(OK).encode()))
    with pytest.raises(OpenAIError, match="more than 1000 bytes"):
        OpenAIChatAgent(server.url, "m", retries=0).act(None, INFO)


def test_dropped_connections_are_retried_then_reported(serve):
    calls = []

    def drop_then_answer(h):
        calls.append(1)
        if len(calls) < 3:
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)  # RemoteDisconnected on the client
            return
        answer(json.dumps(OK).encode())(h)

    server = serve(drop_then_answer)
    agent = OpenAIChatAgent(server.url, "m", retries=2, timeout=5)
    assert agent.act(None, INFO)["content"] == "Done."
    calls.clear()
    with pytest.raises(OpenAIError, match="cannot reach"):
        OpenAIChatAgent(server.url, "m", retries=1, timeout=5).act(None, INFO)


def test_the_timeout_bounds_the_whole_request(serve):
    def trickle(h):
        body = json.dumps(OK).encode()
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for byte in body:
            try:
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
            except OSError:
                return
            time.sleep(0.2)

    server = serve(trickle)
    start = time.monotonic()
    with pytest.raises(OpenAIError):
        OpenAIChatAgent(server.url, "m", retries=0, timeout=1).act(None, INFO)
    assert time.monotonic() - start < 2.5


def test_credentials_never_follow_a_redirect_to_another_host(serve):
    elsewhere = serve(answer(json.dumps(OK).encode()), host="127.0.0.2")
    moved = serve(answer(b"", 307, [("Location", elsewhere.url + "/chat/completions")]))
    with pytest.raises(OpenAIError, match="another host"):
        OpenAIChatAgent(moved.url, "m", api_key="secret", retries=0).act(None, INFO)
    assert not elsewhere.requests
    same = serve(answer(json.dumps(OK).encode()))
    hop = serve(answer(b"", 307, [("Location", same.url + "/chat/completions")]))
    with pytest.raises(OpenAIError, match="another host"):  # another port is another origin too
        OpenAIChatAgent(hop.url, "m", api_key="secret", retries=0).act(None, INFO)
    assert not same.requests


# Known bug (strict: this fails loudly once fixed, then drop the mark): urllib's
# HTTPRedirectHandler.redirect_request raises HTTPError for a POST answered 307/308, and
# _SameOriginRedirects calls it before its own 307/308 branch that keeps the body, so that
# branch never runs and the agent reports "answered HTTP 307". Fix: build the POST copy for
# 307/308 in _SameOriginRedirects before (instead of) calling super().
@pytest.mark.parametrize("code", [307, 308])
@pytest.mark.parametrize("absolute", [True, False], ids=["absolute", "relative"])
def test_a_redirect_within_the_origin_is_followed_with_body_and_credentials(serve, code, absolute):
    moved = "/v2/chat/completions"

    def hop(h):
        if h.path == moved:
            answer(json.dumps(OK).encode())(h)
        else:  # same host and port: a path on this server itself
            answer(b"", code, [("Location", (server.url.rsplit("/v1", 1)[0] if absolute else "") + moved)])(h)

    server = serve(hop)
    agent = OpenAIChatAgent(server.url, "m", api_key="secret", seed=7, retries=0, timeout=5)
    assert agent.act(None, INFO)["content"] == "Done."
    assert [path for path, _ in server.posts] == ["/v1/chat/completions", moved]
    first, second = (json.loads(body) for _, body in server.posts)
    assert second == first == agent.request_body(INFO)  # the POST body survives the redirect
    assert all(r.get("Authorization") == "Bearer secret" for r in server.requests)
    assert server.requests[1].get("Content-Type") == "application/json"


def test_evaluate_keeps_played_episodes_when_a_call_fails(serve):
    from seal_envs.eval import evaluate

    state = {"n": 0}

    def flaky(h):
        state["n"] += 1
        if state["n"] == 2:
            answer(b"gateway exploded", 400)(h)
        else:
            answer(json.dumps(OK).encode())(h)

    server = serve(flaky)
    result = evaluate("seal/ToolUse-Bank-v0", lambda seed: OpenAIChatAgent(server.url, "m", seed=seed, retries=0),
                      split="test", limit=3, batch_size=1)
    assert len(result.episodes) == 3
    errors = [e.get("agent_error") for e in result.episodes]
    assert sum(e is not None for e in errors) == 1 and "HTTP 400" in next(e for e in errors if e)
    assert all("verification" not in e and e["failed_checks"] is not None for e in result.episodes)
