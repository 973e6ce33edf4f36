"""The training surface across processes: one owner publishes it, every env worker reads it.

RL frameworks step environments where the owner of co-evolution cannot reach them with a
method call: verl runs agent loops in Ray worker processes, verifiers in spawned servers,
OpenEnv in a server process, GEM and SkyRL in threads that a trainer may fork. A
:class:`SurfaceChannel` is a file: the owner (the one :class:`~seal_envs.CoEvolution`) writes
the surface with :meth:`~SurfaceChannel.publish`, atomically (a reader sees the old file or the
new one, never half of one); every worker calls :meth:`~SurfaceChannel.latest` at reset, which
costs one ``stat`` while nothing changed. The file is the surface state file
(``format: seal-surface``, :meth:`Surface.to_json`), so ``seal_envs`` reads it like any saved
surface, and its ``version`` (the number of patches applied) is the channel's version.

:class:`LatestSurface` is the worker side as a Gymnasium wrapper: at every reset a training env
shows the newest published surface; an evaluation env keeps its frozen canonical surface.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym

from seal_envs.core.surface import CANONICAL, Surface

__all__ = ["LatestSurface", "SurfaceChannel"]

# One cache per process and path, so that a fresh ``SurfaceChannel(path)`` per call (as an
# adapter may write it) is as cheap as a kept one: path -> ((inode, mtime_ns, size), surface).
_CACHE: dict[str, tuple[tuple[int, int, int], Surface]] = {}
_CACHE_LOCK = threading.Lock()
# The owner locks held by this process: path -> open lock file (kept open while the process lives).
_OWNED: dict[str, Any] = {}


class ChannelOwnerError(RuntimeError):
    """Another process already publishes to this channel: co-evolution has one owner."""


class SurfaceChannel:
    """A surface shared through the file ``path`` (created on the first publish, with its folder).

    Before anything is published, :meth:`latest` is the canonical surface (version 0). Only one
    process may publish to a path (an advisory ``flock`` on ``path + ".lock"``, released when
    that process exits): a second owner would make workers flip between two surfaces, so it is
    an error that names the path."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._key = str(self.path.resolve())

    def __repr__(self) -> str:
        return f"SurfaceChannel({str(self.path)!r})"

    def publish(self, surface: Surface) -> int:
        """Replace the published surface with ``surface``; return its version. Workers see it
        at their next reset."""
        if not isinstance(surface, Surface):
            raise TypeError(f"publish a seal_envs Surface, got {type(surface).__name__}")
        if surface.frozen:
            raise ValueError("publish the training surface, not a frozen one: a frozen surface is what "
                             "evaluation envs hold, and a train env given one could not be updated again")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._own()
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(surface.to_json())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)  # atomic on POSIX and Windows: readers see old or new
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return surface.version

    def latest(self) -> Surface:
        """The newest published surface (the canonical one before the first publish). Re-read
        only when the file changed: each publish replaces the file, so its inode, modification
        time or size differ."""
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return CANONICAL
        with f:
            st = os.fstat(f.fileno())  # the key and the text come from the same file
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = _CACHE.get(self._key)
            if cached is not None and cached[0] == key:
                return cached[1]
            surface = Surface.from_json(f.read().decode("utf-8"), f"surface channel {self.path}")
        with _CACHE_LOCK:
            _CACHE[self._key] = (key, surface)
        return surface

    @property
    def version(self) -> int:
        return self.latest().version

    def _own(self) -> None:
        if self._key in _OWNED:
            return
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock, one owner by convention
            _OWNED[self._key] = None
            return
        lock = open(f"{self.path}.lock", "a")
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            raise ChannelOwnerError(f"another process publishes to the surface channel {self.path}: co-evolution "
                                    "has one owner; publish from it only, or give this run its own path") from None
        _OWNED[self._key] = lock


class LatestSurface(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Show the newest surface of ``channel`` from every reset on; evaluation envs (a frozen
    canonical surface) are left as they are, so they stay canonical by construction.

    ``channel``: a :class:`SurfaceChannel` or its path. Works inside Gymnasium's vector envs
    (``gym.make_vec(..., wrappers=[...])``), async ones included: each copy reads the file."""

    def __init__(self, env: gym.Env, channel: SurfaceChannel | str | os.PathLike):
        gym.utils.RecordConstructorArgs.__init__(self, channel=str(getattr(channel, "path", channel)))
        gym.Wrapper.__init__(self, env)
        self.channel = channel if isinstance(channel, SurfaceChannel) else SurfaceChannel(channel)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        base = self.env.unwrapped
        if not base.surface.frozen:
            surface = self.channel.latest()
            if surface != base.surface:
                base.set_surface(surface)
        return self.env.reset(seed=seed, options=options)
