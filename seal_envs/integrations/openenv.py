"""SEAL's environments over OpenEnv's protocol (``openenv`` 0.10.0, not ``openenv-core``).

:func:`create_app` is OpenEnv's ``create_app`` over :class:`SealEnvironment`: one env per
WebSocket session (``/ws``), so an episode keeps its state between messages, any number of
clients play at once up to ``max_sessions``, a session idle for ``idle_timeout_s`` is closed
and its env freed, and a client that disconnects mid-episode frees its env at once. ``seal
serve`` runs it under uvicorn. Any OpenEnv client talks to it: :class:`SealEnvClient` (typed),
or OpenEnv's ``GenericEnvClient`` with ``{"message": ...}`` actions::

    with SealEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(task_id="bank/train/d2/5")   # or seed=..., index=...
        result = client.step('<tool_call>{"name": ..., "arguments": {...}}</tool_call>')
        result.observation.final                            # the episode's record, at the end

An action is whatever ``env.step`` takes (text, a call dict, a list of them, an assistant
message); a malformed one is a ``format_error`` turn. A request the protocol cannot serve (no
such message type, an action without ``message``, a step before ``reset`` or after the end, a
task id that does not exist, a session closed for idling) is an error frame the client raises
as ``RuntimeError`` with the reason; the session stays usable where it can.

Co-evolution: ``create_app(..., surface_channel=PATH)`` (``seal serve --surface-channel``)
makes every session show the newest surface published to that
:class:`~seal_envs.integrations.channel.SurfaceChannel` at each reset; evaluation ids stay canonical.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from typing import Any, Optional

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app as _openenv_create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field

from seal_envs.integrations.common import final_record, is_final, make_env, reset_arguments

__all__ = ["SealAction", "SealEnvClient", "SealEnvironment", "SealObservation", "SealState", "SessionError",
           "create_app", "serve"]


class SessionError(RuntimeError):
    """A request this session cannot serve (no episode running, the session was closed)."""


class SealAction(Action):
    message: Any = Field(description="what the agent says: text (tool calls in <tool_call> blocks or a model "
                         "family's format), a call dict {'name', 'arguments'}, a list of them, or an "
                         "OpenAI-style assistant message")


class SealObservation(Observation):
    text: str = Field(default="", description="the new messages since the last action, rendered as the env shows them")
    messages: list[dict[str, Any]] = Field(default_factory=list, description="the same messages as chat messages")
    tools: Optional[list[dict[str, Any]]] = Field(default=None, description="the tools as OpenAI schemas: at reset, "
                                                  "and whenever a user turn changes them")
    step_label: dict[str, Any] = Field(default_factory=dict, description="the diagnosis of this step ({} at reset)")
    step_index: int = 0
    task_id: str = ""
    surface_version: int = 0
    truncated: bool = False
    final: Optional[dict[str, Any]] = Field(default=None, description="at the end: the episode's record (verdict, "
                                            "per-step labels, official tags and progress)")


class SealState(State):
    env_id: str = ""
    task_id: Optional[str] = None
    surface_version: int = 0
    done: bool = False


class SealEnvironment(Environment):
    """One session's env. ``env_id`` and ``env_kwargs`` as for ``gym.make``."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session owns its env; shared caches are read-only

    def __init__(self, env_id: str = "seal/ToolUse-v0", surface_channel: str | os.PathLike | None = None,
                 env_kwargs: dict[str, Any] | None = None, on_close: Callable[["SealEnvironment"], None] | None = None):
        super().__init__()
        self._on_close = on_close
        self.env_id = env_id
        self.env = make_env(env_id, surface_channel=surface_channel, **(env_kwargs or {}))
        self._state = SealState(env_id=env_id)
        self._running = False
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise SessionError("this session was closed (idle for longer than the server's idle timeout, or the "
                               "server shut it); open a new connection")

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, task_id: Optional[str] = None,
              index: Optional[int] = None, split: Optional[str] = None, domain: Optional[str] = None,
              difficulty: Optional[int] = None, **unknown: Any) -> SealObservation:
        self._check_open()
        if unknown:  # a misspelt field would otherwise play a random task without a word
            raise ValueError(f"unknown reset field(s) {sorted(unknown)}; reset takes seed, episode_id, task_id, "
                             "index, split, domain, difficulty")
        row = {"seed": seed, "task_id": task_id, "index": index, "split": split, "domain": domain,
               "difficulty": difficulty}
        seed, options = reset_arguments({k: v for k, v in row.items() if v is not None})
        text, info = self.env.reset(seed=seed, options=options)
        self._running = True
        self._state = SealState(episode_id=episode_id or str(uuid.uuid4()), step_count=0, env_id=self.env_id,
                                task_id=info["task_id"], surface_version=info["surface_version"])
        return self._observation(text, info, 0.0, False, False, tools=info["tools"])

    def step(self, action: SealAction, timeout_s: Optional[float] = None, **_: Any) -> SealObservation:
        self._check_open()
        if not self._running:
            raise SessionError("no episode is running: send reset first (and again after an episode ends). Over "
                               "plain HTTP every /step request gets a new env (OpenEnv); play episodes over the "
                               "WebSocket /ws, e.g. with SealEnvClient")
        message = action.message if isinstance(action, SealAction) else action
        text, reward, terminated, truncated, info = self.env.step(message)
        self._state.step_count += 1
        tools = info.get("tools")  # the env says when the tool list changed
        if terminated or truncated:
            self._running = False
            self._state.done = True
        return self._observation(text, info, float(reward), bool(terminated or truncated), bool(truncated), tools)

    def _observation(self, text: str, info: dict, reward: float, done: bool, truncated: bool,
                     tools: list | None) -> SealObservation:
        from seal_envs.integrations.common import chat_messages

        new = chat_messages(info["new_messages"])
        return SealObservation(text=text, messages=new, tools=tools, step_label=info["step_label"],
                               step_index=info["user_turn"], task_id=info["task_id"],
                               surface_version=info["surface_version"], truncated=truncated, reward=reward, done=done,
                               final=final_record(info, reward) if is_final(info) else None)

    @property
    def state(self) -> SealState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=self.env_id, description=f"SEAL-Gym {self.env_id}: multi-turn tool use with "
                                   "executable verification and turn-level labels", version="v0")

    def close(self) -> None:
        """OpenEnv calls this when the session ends: the client closed or disconnected, or it
        idled past the timeout (the connection may still be open then: see ``_check_open``)."""
        if self._closed:
            return
        self._closed = True
        self.env.close()
        if self._on_close is not None:
            self._on_close(self)


def create_app(env_id: str = "seal/ToolUse-v0", *, max_sessions: int = 64, idle_timeout_s: float | None = 300.0,
               surface_channel: str | os.PathLike | None = None, **env_kwargs: Any):
    """The FastAPI app serving ``env_id`` over OpenEnv's protocol (run it with uvicorn).

    ``max_sessions``: concurrent WebSocket sessions, each with its own env (one more is refused
    with an error frame); ``idle_timeout_s``: close a session that sent nothing for this long
    (``None``: never; OpenEnv checks every ``max(timeout / 4, 5)`` seconds); ``env_kwargs`` go
    to ``gym.make`` (``max_steps``, ``split``...). The env is built once here, so a bad id or
    keyword fails now, not at the first client."""
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
    if idle_timeout_s is not None and idle_timeout_s <= 0:
        raise ValueError(f"idle_timeout_s must be positive (or None for no timeout), got {idle_timeout_s}")
    SealEnvironment(env_id, surface_channel, env_kwargs).close()
    live: set[SealEnvironment] = set()  # open envs: one per session (and, briefly, per plain HTTP request)
    lock = threading.Lock()

    def release(env: SealEnvironment) -> None:
        with lock:
            live.discard(env)

    def factory() -> SealEnvironment:
        env = SealEnvironment(env_id, surface_channel, env_kwargs, on_close=release)
        with lock:
            live.add(env)
        return env

    app = _openenv_create_app(factory, SealAction, SealObservation, env_name=env_id.replace("/", "_"),
                              concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                                   session_timeout=idle_timeout_s),
                              state_cls=SealState)

    from fastapi.responses import JSONResponse

    @app.get("/sessions", tags=["Environment Info"])
    async def _sessions() -> dict[str, Any]:
        """How many envs are open now, against the limit: what a client that disconnected or
        idled out gave back shows here."""
        return {"open_envs": len(live), "max_sessions": max_sessions, "idle_timeout_s": idle_timeout_s,
                "env_id": env_id}

    @app.exception_handler(SessionError)
    async def _session_error(request, exc):  # plain HTTP: the reason, not a bare 500
        return JSONResponse(status_code=409, content={"detail": str(exc)})

    @app.exception_handler(ValueError)
    async def _value_error(request, exc):
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    return app


def serve(env_id: str = "seal/ToolUse-v0", *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
          **app_kwargs: Any) -> None:
    """Serve :func:`create_app` under uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_app(env_id, **app_kwargs), host=host, port=port, log_level=log_level)


class SealEnvClient(EnvClient[SealAction, SealObservation, SealState]):
    """OpenEnv's WebSocket client for a SEAL server: ``step`` takes a :class:`SealAction` or
    anything its ``message`` may be (text, a call dict...)."""

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, SealAction):
            return action.model_dump()
        return {"message": action}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SealObservation]:
        obs = dict(payload.get("observation", {}))
        obs.update(reward=payload.get("reward"), done=payload.get("done", False))
        return StepResult(observation=SealObservation.model_validate(obs), reward=payload.get("reward"),
                          done=payload.get("done", False), metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> SealState:
        return SealState.model_validate(payload)
