"""The OpenAI-compatible agent against hostile local servers: every fault is an OpenAIError,
transient ones are retried, the timeout bounds the whole request, credentials stay on their host,
and evaluate() keeps the episodes already played when a call fails."""

import http.server
import json
import socket
import threading
import time

import pytest

from seal_envs.openai_agent import PROBE_MESSAGES, OpenAIBatchAgent, OpenAIChatAgent, OpenAIError, check_server

OK = {"choices": [{"message": {"role": "assistant", "content": "Done."}}]}
INFO = {"messages": [{"role": "user", "content": "hi"}], "tools": []}


class Server:
    """A local HTTP server whose handler answers with ``behave(handler)``; records requests."""

    def __init__(self, behave, host="127.0.0.1"):
        self.requests: list[dict] = []
        self.posts: list[tuple[str, bytes]] = []  # (path, body) of each request
        self.gets: list[tuple[str, dict]] = []  # (path, headers) of each GET
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                self.body = self.rfile.read(length)  # this request's own body, for behave(self)
                outer.posts.append((self.path, self.body))
                outer.requests.append(dict(self.headers))
                behave(self)

            def do_GET(self):  # the pre-flight's GET /models; recorded apart from the chat POSTs
                outer.gets.append((self.path, dict(self.headers)))
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


@pytest.mark.slow
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


# urllib's HTTPRedirectHandler.redirect_request refuses a POST answered 307/308: _SameOriginRedirects
# builds the POST copy (body and headers) itself before calling super().
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
    result = evaluate("seal/ToolUse-Bank-v0", lambda seed: OpenAIChatAgent(server.url, "m", seed=seed, retries=0,
                                                                          tools_in_prompt="never"),  # no probe requests
                      split="test", limit=3, batch_size=1)
    assert len(result.episodes) == 3
    errors = [e.get("agent_error") for e in result.episodes]
    assert sum(e is not None for e in errors) == 1 and "HTTP 400" in next(e for e in errors if e)
    assert all("verdict" not in e and e["failed_checks"] is not None for e in result.episodes)


# -- many requests in flight: OpenAIBatchAgent under evaluate() ------------------------------
class InFlight:
    """Counts the chat requests the server is answering at the same moment."""

    def __init__(self):
        self.lock, self.now, self.max = threading.Lock(), 0, 0

    def __enter__(self):
        with self.lock:
            self.now += 1
            self.max = max(self.max, self.now)

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1


def is_probe(body: dict) -> bool:
    """Whether a chat request is the agent's tools probe (seal_envs.openai_agent.probe_tools)."""
    return body.get("max_tokens") == 1 and body["messages"] == list(PROBE_MESSAGES)


def chat_posts(server) -> list[bytes]:
    """The bodies of the chat requests of episodes: every POST but the tools probe's."""
    return [body for _, body in server.posts if not is_probe(json.loads(body))]


def answer_probe(h, body: dict) -> None:
    """A server that renders tools: more prompt tokens with them than without."""
    tokens = 20 + (60 if body.get("tools") else 0)
    answer(json.dumps({"choices": [{"message": {"role": "assistant", "content": "It"}}],
                       "usage": {"prompt_tokens": tokens, "completion_tokens": 1}}).encode())(h)


def scripted(h) -> None:
    """A deterministic model: a user message gets a call of get_balance, anything else a text
    that names the request's seed and length (so every episode's transcript is its own)."""
    body = json.loads(h.body)
    if is_probe(body):
        return answer_probe(h, body)
    messages, seed = body["messages"], body.get("seed")
    if messages[-1]["role"] == "user":
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{len(messages)}", "type": "function",
            "function": {"name": "get_balance", "arguments": json.dumps({"account_id": f"ACC-{1000 + seed}"})}}]}
    else:
        message = {"role": "assistant", "content": f"Done for seed {seed} after {len(messages)} messages."}
    answer(json.dumps({"choices": [{"message": message}]}).encode())(h)


def slow_server(serve, delay=0.3, fail_seed=None, hang_seed=None):
    """``scripted`` behind ``delay`` s per chat request, recording in ``.flight`` the most
    requests in flight at once; seed ``fail_seed`` is answered HTTP 400, ``hang_seed`` never in time."""
    flight = InFlight()

    def handle(h):
        if h.command == "GET":
            return answer(b"{}")(h)
        body = json.loads(h.body)
        if is_probe(body):  # answered at once, outside the in-flight count
            return answer_probe(h, body)
        seed = body.get("seed")
        if seed == hang_seed:
            time.sleep(3)
            return
        with flight:
            time.sleep(delay)
        if seed == fail_seed:
            return answer(b"no such model today", 400)(h)
        scripted(h)

    server = serve(handle)
    server.flight = flight
    return server


@pytest.mark.slow
def test_a_batch_of_episodes_has_many_requests_in_flight(serve):
    from seal_envs.eval import evaluate

    server = slow_server(serve, delay=0.3)
    agent = OpenAIBatchAgent(server.url, "m", concurrency=8, retries=0, timeout=10)
    result = evaluate("seal/ToolUse-Bank-v0", agent, split="test", limit=4, n=2, batch_size=8)
    assert len(result.episodes) == 8 and not any(e.get("agent_error") for e in result.episodes)
    requests = len(chat_posts(server))
    rounds = max(e["actions"] for e in result.episodes)  # lockstep: one round per action of the longest
    assert requests == sum(e["actions"] for e in result.episodes) and requests >= 2 * rounds
    assert server.flight.max == 8, server.flight.max  # round 1: every episode's request at once
    # one at a time this takes requests x 0.3 s; concurrently about rounds x 0.3 s
    assert result.seconds < 0.6 * requests * 0.3, (result.seconds, requests, rounds)
    assert result.seconds < rounds * 0.3 + 2.0, (result.seconds, rounds)


@pytest.mark.slow
def test_concurrency_bounds_the_requests_in_flight(serve):
    from seal_envs.eval import evaluate

    server = slow_server(serve, delay=0.2)
    result = evaluate("seal/ToolUse-Bank-v0", OpenAIBatchAgent(server.url, "m", concurrency=3, retries=0),
                      split="test", limit=8, batch_size=8)
    assert len(result.episodes) == 8 and not any(e.get("agent_error") for e in result.episodes)
    assert server.flight.max == 3, server.flight.max


def test_concurrent_results_equal_the_one_at_a_time_results(serve):
    """Each episode sends its own seeded body, so a deterministic server gives the same episodes
    (transcripts included) whether its requests go one at a time or all at once."""
    from seal_envs.eval import evaluate

    server = serve(scripted)
    one = evaluate("seal/ToolUse-Bank-v0", lambda seed: OpenAIChatAgent(server.url, "m", seed=seed, retries=0),
                   split="test", limit=4, n=2, seed=5, batch_size=1)
    sent_one = sorted(chat_posts(server))
    server.posts.clear()
    many = evaluate("seal/ToolUse-Bank-v0", OpenAIBatchAgent(server.url, "m", concurrency=8, retries=0),
                    split="test", limit=4, n=2, seed=5, batch_size=8)
    assert sorted(chat_posts(server)) == sent_one  # the same requests, byte for byte
    assert many.episodes == one.episodes and len(many.episodes) == 8
    for e in many.episodes:  # no episode got another's answer: every text names its own seed
        texts = [m["content"] for m in e["transcript"] if m["role"] == "assistant" and m["content"]]
        assert texts and all(t.startswith(f"Done for seed {e['seed']} ") for t in texts), (e["seed"], texts)
    assert {e["seed"] for e in many.episodes} == {5, 6}


@pytest.mark.parametrize("fault", ["http_400", "timeout"])
def test_one_failing_request_loses_only_its_own_episode(serve, fault):
    from seal_envs.eval import evaluate

    server = slow_server(serve, delay=0.1, **({"fail_seed": 2} if fault == "http_400" else {"hang_seed": 2}))
    agent = OpenAIBatchAgent(server.url, "m", concurrency=4, retries=0, timeout=1)
    start = time.monotonic()
    result = evaluate("seal/ToolUse-Bank-v0", agent, split="test", limit=1, n=4, batch_size=4)
    took = time.monotonic() - start
    assert [e["seed"] for e in result.episodes] == [0, 1, 2, 3]
    failed = [e for e in result.episodes if e.get("agent_error")]
    assert [e["seed"] for e in failed] == [2]
    assert ("HTTP 400" if fault == "http_400" else "timed out") in failed[0]["agent_error"]
    assert failed[0]["transcript"][-1]["role"] == "user" and failed[0]["actions"] == 0
    for e in result.episodes:
        if e["seed"] != 2:  # played to the end, with their own answers
            assert e["actions"] == 2 and e["transcript"][-1]["content"].startswith(f"Done for seed {e['seed']} ")
    if fault == "timeout":  # the whole-request timeout holds for each request in flight: 1 s, not the server's 3 s
        assert took < 2.9, took


@pytest.mark.slow
def test_seal_eval_concurrency_flag_reaches_the_agent(serve, tmp_path):
    server = slow_server(serve, delay=0.3)
    done, took = _seal_eval(f"openai:{server.url}#m", "--concurrency", "4", "--batch-size", "8", "--quiet",
                            "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert server.flight.max == 4, server.flight.max
    data = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))
    assert len(data["episodes"]) == 5
    for e in data["episodes"]:
        assert [m["role"] for m in e["transcript"][:2]] == ["system", "user"]
        assert e["transcript"][-1]["content"].startswith(f"Done for seed {e['seed']} ")
    assert "Done for seed" not in (tmp_path / "eval.md").read_text(encoding="utf-8")
    bad, _ = _seal_eval(f"openai:{server.url}#m", "--concurrency", "0")
    assert bad.returncode == 2 and "--concurrency: must be at least 1, got 0" in bad.stderr, bad.stderr


# -- the pre-flight: GET /models once, before any episode -------------------------------------
def closed_port_url() -> str:
    """A base url on 127.0.0.1 whose port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_check_server_passes_a_server_that_answers_or_lacks_models(serve):
    for status in (200, 404, 405, 500):  # not every server serves /models: only the key is judged here
        server = serve(answer(b'{"data": []}', status))
        check_server(server.url + "/", api_key="sk-x", timeout=5)
        assert [path for path, _ in server.gets] == ["/v1/models"]
        assert server.gets[0][1].get("Authorization") == "Bearer sk-x"
    server = serve(answer(b"{}"))
    check_server(server.url + "/chat/completions", api_key="", timeout=5)  # a full chat url works too
    assert [path for path, _ in server.gets] == ["/v1/models"] and "Authorization" not in server.gets[0][1]


@pytest.mark.parametrize("status", [401, 403])
def test_check_server_names_a_refused_key(serve, monkeypatch, status):
    server = serve(answer(b'{"error": "invalid api key"}', status))
    with pytest.raises(OpenAIError, match=f"refused the API key.*HTTP {status}.*invalid api key.*OPENAI_API_KEY"):
        check_server(server.url, api_key="sk-wrong", timeout=5)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(OpenAIError, match="needs an API key and none was sent"):
        check_server(server.url, timeout=5)
    assert not server.posts


def test_check_server_names_an_unreachable_server_quickly():
    url = closed_port_url()
    start = time.monotonic()
    with pytest.raises(OpenAIError, match=f"cannot reach the server at {url} .*is it running"):
        check_server(url, timeout=5)
    with pytest.raises(OpenAIError, match="cannot reach the server at http://no-such-host.invalid"):
        check_server("http://no-such-host.invalid/v1", timeout=5)
    assert time.monotonic() - start < 20


def test_check_server_times_out_on_a_silent_server(serve):
    server = serve(lambda h: time.sleep(3))  # accepts, never answers in time
    start = time.monotonic()
    with pytest.raises(OpenAIError, match="cannot reach.*within 0.5 s.*timed out"):
        check_server(server.url, timeout=0.5)
    assert time.monotonic() - start < 2.5


def _seal_eval(agent: str, *extra: str, env=None):
    import os
    import subprocess
    import sys

    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "seal_cli", "eval", "seal/ToolUse-Bank-v0", "--agent", agent,
                           "--split", "test", "--limit", "5", *extra], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    return done, time.monotonic() - start


def test_seal_eval_stops_before_the_episodes_when_the_server_is_down(tmp_path):
    url = closed_port_url()
    done, took = _seal_eval(f"openai:{url}#m", "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seal: error: cannot reach the server at " + url), lines
    assert "Traceback" not in done.stderr and "episode" not in done.stderr  # no bar, no "failed in N episodes"
    assert done.stdout == "" and not (tmp_path / "out" / "eval.json").exists()  # no episode ran, none was saved
    assert took < 20, took  # one refused connection, not 5 episodes x 3 attempts with back-off


def test_seal_eval_stops_before_the_episodes_when_the_key_is_refused(serve):
    server = serve(answer(b'{"error": "bad key"}', 401))
    done, took = _seal_eval(f"openai:{server.url}#m", env={"OPENAI_API_KEY": "sk-wrong"})
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused the API key" in lines[0] and "OPENAI_API_KEY" in lines[0], lines
    assert [path for path, _ in server.gets] == ["/v1/models"] and not server.posts  # no chat request: no episode
    assert took < 20, took
