"""SurfaceChannel: one owner publishes the training surface; env workers in other processes show
the newest one at reset; evaluation envs stay canonical."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

import seal_envs
from seal_envs import CANONICAL, Surface, SurfacePatch
from seal_envs.core.statefile import StateFileError
from seal_envs.integrations.channel import ChannelOwnerError, LatestSurface, SurfaceChannel

ROOT = Path(__file__).resolve().parents[2]
PATCH1 = SurfacePatch("recovery", "schema_violation", 2, "test")
PATCH2 = SurfacePatch("affordance", "get_balance", 1, "test")


def run_python(code: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_publish_then_latest_round_trips_in_the_surface_file_format(tmp_path):
    channel = SurfaceChannel(tmp_path / "run" / "surface.json")
    assert channel.latest() is CANONICAL and channel.version == 0      # nothing published yet
    surface = CANONICAL.apply(PATCH1)
    assert channel.publish(surface) == 1
    assert channel.latest() == surface
    data = json.loads((tmp_path / "run" / "surface.json").read_text())
    assert data["format"] == "seal-surface" and data["version"] == 1      # the surface state file, as saved
    assert Surface.from_json((tmp_path / "run" / "surface.json").read_text()) == surface
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")]   # no temp file left


def test_latest_reads_the_file_only_when_it_changed(tmp_path, monkeypatch):
    channel = SurfaceChannel(tmp_path / "s.json")
    channel.publish(CANONICAL.apply(PATCH1))
    first = channel.latest()
    reads = []
    monkeypatch.setattr(Surface, "from_json", staticmethod(lambda *a, **k: reads.append(a) or first))
    assert SurfaceChannel(tmp_path / "s.json").latest() is first     # a fresh object shares the cache
    assert not reads
    channel.publish(first.apply(PATCH2))
    SurfaceChannel(tmp_path / "s.json").latest()
    assert len(reads) == 1


def test_frozen_or_non_surfaces_and_corrupt_files_are_clear_errors(tmp_path):
    channel = SurfaceChannel(tmp_path / "s.json")
    with pytest.raises(ValueError, match="frozen"):
        channel.publish(CANONICAL.freeze())
    with pytest.raises(TypeError, match="Surface"):
        channel.publish({"version": 1})
    (tmp_path / "s.json").write_text('{"format": "seal-surface", "version": 1')
    with pytest.raises(StateFileError, match="s.json"):
        channel.latest()


def test_the_wrapper_shows_the_newest_surface_at_reset_and_evaluation_stays_canonical(tmp_path):
    channel = SurfaceChannel(tmp_path / "s.json")
    train = LatestSurface(gym.make("seal/ToolUse-Bank-v0"), channel)
    test = LatestSurface(gym.make("seal/ToolUse-Bank-v0", split="test"), channel)
    channel.publish(CANONICAL.apply(PATCH1))
    _, info = train.reset(seed=0)
    assert info["surface_version"] == 1
    channel.publish(channel.latest().apply(PATCH2))
    train.step("hello")
    assert train.unwrapped.surface.version == 1      # mid-episode: unchanged until the next reset
    _, info = train.reset(seed=1)
    assert info["surface_version"] == 2 and train.unwrapped.surface.level("affordance", "get_balance") == 1
    _, info = test.reset(seed=0)
    assert info["surface_version"] == 0 and test.unwrapped.surface.frozen


WORKER = """
import sys
import gymnasium as gym
import seal_envs
from seal_envs.integrations.channel import LatestSurface
path = sys.argv[1]
train = LatestSurface(gym.make("seal/ToolUse-Bank-v0"), path)
evaluation = LatestSurface(gym.make("seal/ToolUse-Bank-v0", split="test"), path)
print("ready", flush=True)
for seed, line in enumerate(sys.stdin):
    _, a = train.reset(seed=seed)
    _, b = evaluation.reset(seed=seed)
    print(a["surface_version"], b["surface_version"], flush=True)
"""


def test_workers_in_other_processes_see_each_publish_at_their_next_reset(tmp_path):
    path = tmp_path / "surface.json"
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(path)], text=True, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
               for _ in range(2)]
    try:
        assert [w.stdout.readline().strip() for w in workers] == ["ready", "ready"]
        channel, surface, seen = SurfaceChannel(path), CANONICAL, []
        for patch in (None, PATCH1, PATCH2):
            if patch is not None:
                surface = surface.apply(patch)
                channel.publish(surface)
            for w in workers:
                w.stdin.write("reset\n")
                w.stdin.flush()
            seen.append([w.stdout.readline().split() for w in workers])
        assert seen == [[["0", "0"]] * 2, [["1", "0"]] * 2, [["2", "0"]] * 2]
    finally:
        for w in workers:
            w.stdin.close()
            w.wait(timeout=30)


def test_an_async_vector_env_shows_the_published_surface_in_every_copy(tmp_path):
    channel = SurfaceChannel(tmp_path / "s.json")
    channel.publish(CANONICAL.apply(PATCH1).apply(PATCH2))
    envs = gym.make_vec("seal/ToolUse-Bank-v0", num_envs=2, vectorization_mode="async",
                        wrappers=[lambda env: LatestSurface(env, tmp_path / "s.json")])
    try:
        _, infos = envs.reset(seed=0)
        assert list(infos["surface_version"]) == [2, 2]
    finally:
        envs.close()


def test_a_second_owner_in_another_process_is_refused(tmp_path):
    path = tmp_path / "s.json"
    SurfaceChannel(path).publish(CANONICAL.apply(PATCH1))
    SurfaceChannel(path).publish(CANONICAL.apply(PATCH1).apply(PATCH2))     # same process: the same owner
    other = run_python(f"""
        from seal_envs import CANONICAL
        from seal_envs.integrations.channel import SurfaceChannel
        try:
            SurfaceChannel({str(path)!r}).publish(CANONICAL)
        except Exception as e:
            print(type(e).__name__, e)
    """)
    out, err = other.communicate(timeout=60)
    assert out.startswith(ChannelOwnerError.__name__) and "one owner" in out, err
    assert SurfaceChannel(path).version == 2
