"""Your own tools as a SEAL environment: an MCP server and a task file behind ``ToolUseEnv``.

>>> import gymnasium as gym, seal_envs
>>> env = gym.make("seal/MCP-v0", server=["python", "server.py"], tasks="tasks.jsonl")  # doctest: +SKIP

Needs the optional ``mcp`` package (1.x or 2.x: ``pip install 'seal-gym[mcp]'``). This package
is a task source (:class:`MCPTaskSource`), a backend (:class:`MCPBackend`), a blocking client
(:class:`MCPConnection`) and the task-file reader; it imports nothing above ``seal_envs.core``.
The env over it is built by ``seal_envs.registration.make_mcp_env``. See ``docs/mcp.md``.
"""

from .taskfile import TaskFileError, load_task_file

__all__ = ["MCPBackend", "MCPConnection", "MCPServerError", "MCPTaskSource", "TaskFileError", "load_task_file"]


def __getattr__(name: str):  # the client loads on first use: ``import seal_envs`` never imports mcp
    if name == "MCPTaskSource":
        from .source import MCPTaskSource

        return MCPTaskSource
    if name == "MCPBackend":
        from .backend import MCPBackend

        return MCPBackend
    if name in ("MCPConnection", "MCPServerError"):
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'seal_envs.mcp' has no attribute {name!r}")
