"""A blocking MCP client over stdio, with a deadline on every request and a kill switch.

Why not call the SDK directly: the env is synchronous, the SDK is async, and a tool server is
code we do not trust to answer. The connection runs the SDK's ``stdio_client`` and
``ClientSession`` in an event loop on a daemon thread; each request waits at most its timeout,
and a server that misses one is killed (it may be stuck in a loop, or mid-way through a write
whose effect we cannot know), so one bad call costs one timeout, never a hang.

Only wire names are read (``model_dump(by_alias=True)``: ``inputSchema``, ``isError``,
``structuredContent``), which is what mcp 1.x and 2.x agree on. Every process the server
starts inherits a marker in its environment, so :meth:`MCPConnection.close` can find and kill
whatever is left (a server that forked, or a wrapper such as ``uv run``) by the process table.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import tempfile
import threading
import time
import uuid
from typing import Any, Mapping, Sequence

MARKER_VAR = "SEAL_MCP_SESSION"
_EXIT_WAIT = 5.0  # seconds the SDK's own shutdown may take before the process table is used


class MCPServerError(ConnectionError):
    """The server could not be started, or is no longer usable (the message says why). An
    ``OSError``, as a missing file or a refused connection is: a problem of the set-up, which the
    command line reports as one ``seal: error:`` line."""


def _import_sdk():
    try:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("seal/MCP-v0 needs the MCP SDK: pip install 'seal-gym[mcp]' (mcp 1.x or 2.x)") from e
    return ClientSession, StdioServerParameters, stdio_client


def _is_refusal(error: Exception) -> bool:
    """A JSON-RPC error answer (``McpError`` in mcp 1.x, ``MCPError`` in 2.x), not the SDK's
    own "Connection closed" (also one, with code -32000, when the server's stdout ends)."""
    if type(error).__name__ not in ("McpError", "MCPError"):
        return False
    data = getattr(error, "error", None)
    return not (getattr(data, "code", None) == -32000 and "closed" in str(getattr(data, "message", "")).lower())


def marked_pids(marker: str) -> list[int]:
    """Every live process whose environment carries ``marker`` (Linux's /proc; psutil elsewhere)."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found = []
    if os.path.isdir("/proc"):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(name))
            except OSError:
                continue
        return found
    try:  # pragma: no cover - not Linux
        import psutil
    except ImportError:  # pragma: no cover
        return found
    for p in psutil.process_iter():  # pragma: no cover
        try:
            if p.environ().get(MARKER_VAR) == marker:
                found.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return found


def _kill(pids: Sequence[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class MCPConnection:
    """One server process and one initialized session. ``command`` is the argv that starts it.

    ``fault`` is None while the connection is usable, else the reason it is not (the server
    exited, missed a deadline, or answered garbage); after a fault every request fails at
    once with that reason, and :meth:`close` is still safe."""

    def __init__(self, command: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
                 start_timeout: float = 30.0):
        if not command or not all(isinstance(c, str) for c in command):
            raise ValueError(f"server must be a non-empty list of strings (argv), got {command!r}")
        ClientSession, StdioServerParameters, stdio_client = _import_sdk()
        self.command = list(command)
        self.marker = uuid.uuid4().hex
        self.fault: str | None = None
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="seal-mcp", daemon=True)
        self._thread.start()
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        self._closed = False
        ready: concurrent.futures.Future = concurrent.futures.Future()
        params = StdioServerParameters(command=self.command[0], args=self.command[1:], cwd=cwd,
                                       env={**(env or {}), MARKER_VAR: self.marker})
        self._main = asyncio.run_coroutine_threadsafe(self._serve(params, ClientSession, stdio_client, ready), self._loop)
        try:
            self.server_info = ready.result(start_timeout)
        except Exception as e:
            if isinstance(e, concurrent.futures.TimeoutError):
                why = f"did not finish initializing within {start_timeout:g} s"
            else:
                while getattr(e, "exceptions", None):  # an ExceptionGroup from the task group: its first cause
                    e = e.exceptions[0]
                why = f"failed to start: {type(e).__name__}: {e}"
            self.kill()
            time.sleep(0.05)  # let the dying server's last words reach the log
            tail = self._stderr_tail()
            self.close()
            raise MCPServerError(f"MCP server {self.command} {why}{tail}") from None

    async def _serve(self, params, ClientSession, stdio_client, ready: concurrent.futures.Future) -> None:
        self._stop = asyncio.Event()
        try:
            async with stdio_client(params, errlog=self._errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    self._session = session
                    ready.set_result(init.model_dump(by_alias=True).get("serverInfo", {}))
                    await self._stop.wait()
        except BaseException as e:  # noqa: BLE001 - reported to whoever waits, never raised in the loop
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(repr(e)))
            elif self.fault is None and not self._closed:
                self.fault = f"the MCP session ended: {type(e).__name__}: {e}"
            if isinstance(e, asyncio.CancelledError):
                raise

    def _stderr_tail(self, limit: int = 600) -> str:
        try:
            self._errlog.flush()
            self._errlog.seek(0, os.SEEK_END)
            size = self._errlog.tell()
            self._errlog.seek(max(0, size - limit))
            text = self._errlog.read().strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {text}" if text else ""

    def _exit_status(self) -> str:
        pids = marked_pids(self.marker)
        return "" if pids else " (the server process has exited)"

    def request(self, method: str, *args: Any, timeout: float) -> Any:
        """Run ``session.<method>(*args)`` with a deadline; a missed deadline kills the server.

        Returns the result's wire dict. Raises :class:`MCPServerError` for anything that is the
        server's fault (down, too slow, garbage), and passes on the SDK's ``McpError`` for a
        JSON-RPC error answer (a well-formed refusal)."""
        if self.fault is not None:
            raise MCPServerError(self.fault)
        if self._session is None or self._closed:
            raise MCPServerError("the MCP connection is closed")
        future = asyncio.run_coroutine_threadsafe(getattr(self._session, method)(*args), self._loop)
        try:
            result = future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self.fault = f"{method} did not answer within {timeout:g} s; the server was stopped"
            self.kill()
            raise MCPServerError(self.fault) from None
        except Exception as e:
            if _is_refusal(e) and not self._main.done() and marked_pids(self.marker):
                raise  # the server answered with a JSON-RPC error: it is alive and well
            self.fault = f"{method} failed: {type(e).__name__}: {e}{self._exit_status()}{self._stderr_tail()}"
            self.kill()
            raise MCPServerError(self.fault) from None
        try:
            return result.model_dump(by_alias=True)
        except Exception as e:  # noqa: BLE001 - a result the SDK built but cannot spell
            raise MCPServerError(f"{method} returned an unreadable result: {type(e).__name__}: {e}") from None

    def kill(self) -> None:
        """Stop the server now (SIGKILL to every process carrying the marker)."""
        _kill(marked_pids(self.marker))

    def close(self) -> None:
        """End the session, let the SDK stop the server, then kill whatever still carries the
        marker; idempotent, and never raises."""
        if self._closed:
            return
        self._closed = True
        if threading.current_thread() is self._thread:  # a finalizer run by a collection in the loop itself
            self.kill()
            self._loop.call_soon(self._loop.stop)
            return
        if self.fault is not None:
            self.kill()  # no grace period for a server that already misbehaved
        stop = self._stop
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        try:
            self._main.result(_EXIT_WAIT)
        except BaseException:  # noqa: BLE001 - closing must not raise
            self.kill()
            self._main.cancel()
        self.kill()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_EXIT_WAIT)
        if not self._thread.is_alive():
            self._loop.close()
        self._errlog.close()
