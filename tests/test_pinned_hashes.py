"""Pinned hashes of everything an env user can observe, for fixed seeds (issue 16).

Written before the step was optimised, so that the optimisation provably changes nothing
observable: generated tasks, every observation, reward, flag and ``info`` dict of every step,
the verdicts and labels, and the per-turn states the verifier compared, over every native
domain and BFCL, for agents that succeed (the oracle, the ground truth) and agents that hit
every error path (random calls; a chaos agent that interleaves format errors, unknown tools,
schema violations, NaN, wrong values, dict actions and early answers with the reference plan),
on the canonical surface, observation-lite, a surface patched at every level and one patched
in the middle of an episode, with truncation and evolution between episodes.

Each case hashes the canonical JSON of its items in order (sha256). When a change is *meant*
to change what users observe, print the new values with
``python tests/test_pinned_hashes.py`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from typing import Any, Callable, Iterator

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401
from seal_envs import CoEvolution
from seal_envs.agents import OracleAgent, RandomAgent
from seal_envs.core.surface import CHANNELS, MAX_LEVEL, Surface, SurfacePatch
from seal_envs.core.frozen import FrozenDict, FrozenList
from seal_envs.core.types import ToolCall, canonical_json
from seal_envs.domains import GENERATORS
from seal_envs.tasks import generate

DOMAINS = ("bank", "shop", "files", "travel", "calendar", "smarthome")
BFCL_IDS = tuple(f"multi_turn_{c}_{i}" for c in ("base", "miss_func", "miss_param", "long_context")
                 for i in (0, 7, 49, 123, 199))


def _jsonable(value: Any) -> Any:
    """Dataclasses (verdicts, facts, records) as their fields, so canonical JSON can spell them."""
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(v) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=canonical_json) if isinstance(value, (set, frozenset)) else items
    return value


class Digest:
    def __init__(self):
        self.h = hashlib.sha256()

    def add(self, *items: Any) -> None:
        for item in items:
            self.h.update(canonical_json(_jsonable(item)).encode())
            self.h.update(b"\n")

    def hexdigest(self) -> str:
        return self.h.hexdigest()


# -- agents --------------------------------------------------------------------------------
def chaos_mutate(seed: int) -> Callable[[list, int, Any], list]:
    """Interleave broken actions with the reference plan, deterministically per seed."""
    rng = random.Random(seed)

    def broken(call: ToolCall) -> Any:
        args = dict(call.arguments)
        first = next(iter(args), None)
        kind = rng.randrange(11)
        if kind == 0:
            return '<tool_call>{"name": "' + call.name + '"'  # not closed
        if kind == 1:
            return ToolCall(call.name + "s", args)  # unknown tool, with a hint
        if kind == 2 and first is not None:
            return ToolCall(call.name, {k: v for k, v in args.items() if k != first})  # missing required
        if kind == 3:
            return ToolCall(call.name, {**args, "zzz_extra": 1})
        if kind == 4 and first is not None:
            return ToolCall(call.name, {**args, first: [1, {"a": None}]})  # wrong type
        if kind == 5 and first is not None:
            return ToolCall(call.name, {**args, first: float("nan")})
        if kind == 6 and first is not None:
            v = args[first]
            changed = v + 7 if isinstance(v, (int, float)) and not isinstance(v, bool) else f"{v}_x"
            return ToolCall(call.name, {**args, first: changed})  # a wrong value: tool error or wrong state
        if kind == 7:
            return {"role": "assistant", "content": "calling",
                    "tool_calls": [{"id": "c1", "type": "function",
                                    "function": {"name": call.name, "arguments": json.dumps(args)}}]}
        if kind == 8:
            return json.dumps([{"name": call.name, "arguments": args}, {"name": "nope", "arguments": {}}])
        if kind == 9:
            return "[1, 2"  # a JSON list that does not parse
        return "Let me think about it \u2603\x00\n\ud7ff."  # unprintable characters in a plain answer

    def mutate(planned: list, turn: int, task: Any) -> list:
        out: list = []
        for action in planned:
            if isinstance(action, ToolCall) and rng.random() < 0.6:
                out.append(broken(action))
            out.append(action)
        if rng.random() < 0.15 and out:
            out.insert(rng.randrange(len(out)), "I am done already.")  # an early answer ends the turn
        return out

    return mutate


def vandalise(value: Any) -> None:
    """Change everything mutable inside ``value`` in place, as a careless caller might; a
    shared read-only value (the tool schemas in ``info["tools"]``) must refuse the change."""
    if isinstance(value, (FrozenDict, FrozenList)):
        with pytest.raises(TypeError, match="read-only"):
            value.clear()
        return
    if isinstance(value, dict):
        for key in list(value):
            vandalise(value[key])
            if isinstance(value[key], str):
                value[key] += "!"
        value["vandal"] = [1]
    elif isinstance(value, list):
        for item in value:
            vandalise(item)
        value.append({"vandal": 1})


def play(env: gym.Env, agent: Any, digest: Digest, *, seed: int | None = None, options: dict | None = None,
         max_actions: int = 80, patch_at: int | None = None, vandal: bool = False) -> dict:
    """Play one episode, hash every observable item of it, return the last ``info``. With
    ``vandal``, every ``info`` is vandalised once it was hashed and the agent has read it."""
    agent.reset()
    obs, info = env.reset(seed=seed, options=options)
    base = env.unwrapped
    digest.add(obs, info)
    for n in range(max_actions):
        if patch_at is not None and n == patch_at:
            for name in sorted(base.specs)[:3]:
                base.apply_patch(SurfacePatch("affordance", name, 3))
                base.apply_patch(SurfacePatch("constraint", name, 2))
        action = agent.act(env, info)
        if vandal:
            vandalise(info)
        obs, reward, terminated, truncated, info = env.step(action)
        digest.add(obs, reward, terminated, truncated, info)
        if terminated or truncated:
            break
    digest.add(base.record, base.verdict, base.labels, base.available, base.user_turn)
    if vandal:
        vandalise(info)
    return info


def patched_surface(specs: dict) -> Surface:
    surface = Surface(preset="observation_lite")
    for i, name in enumerate(sorted(specs)):
        channel = CHANNELS[i % 2]
        surface = surface.apply(SurfacePatch(channel, name, 1 + i % MAX_LEVEL[channel]))
    for kind, level in (("schema_violation", 2), ("tool_error", 1), ("unknown_tool", 2), ("format_error", 2),
                        ("policy_violation", 2), ("unavailable_tool", 1)):
        surface = surface.apply(SurfacePatch("recovery", kind, level))
    return surface


# -- cases ---------------------------------------------------------------------------------
def native_cases() -> Iterator[tuple[str, Callable[[], str]]]:
    for domain in DOMAINS:
        def tasks(domain=domain) -> str:
            d = Digest()
            for split in ("train", "test", "ood"):
                for difficulty in (1, 2, 3, 4):
                    for seed in (0, 1, 17, 4242):
                        d.add(generate.__wrapped__(domain, seed, difficulty, split).to_dict())
            return d.hexdigest()

        def oracle(domain=domain) -> str:
            d = Digest()
            env = gym.make("seal/ToolUse-v0", domains=(domain,))
            for seed in range(4):
                play(env, OracleAgent(), d, seed=seed)
            play(env, OracleAgent(), d, options={"split": "test", "index": 5})
            return d.hexdigest()

        def random_agent(domain=domain) -> str:
            d = Digest()
            env = gym.make("seal/ToolUse-v0", domains=(domain,), max_steps=10, reward_mode="progress")
            for seed in range(3):
                play(env, RandomAgent(seed, answer_prob=0.1), d, seed=seed)
            return d.hexdigest()

        def chaos(domain=domain) -> str:
            d = Digest()
            env = gym.make("seal/ToolUse-v0", domains=(domain,), max_steps=40)
            for seed in range(4):
                play(env, OracleAgent(mutate=chaos_mutate(seed)), d, seed=seed, patch_at=3 if seed == 1 else None)
            lite = gym.make("seal/ToolUse-v0", domains=(domain,), surface="observation_lite", max_steps=40)
            play(lite, OracleAgent(mutate=chaos_mutate(10)), d, seed=10)
            specs = GENERATORS[domain].backend.tool_specs()
            patched = gym.make("seal/ToolUse-v0", domains=(domain,), surface=patched_surface(specs), max_steps=40)
            for seed in (11, 12):
                play(patched, OracleAgent(mutate=chaos_mutate(seed)), d, seed=seed)
            short = gym.make("seal/ToolUse-v0", domains=(domain,), max_steps=3)
            play(short, OracleAgent(mutate=chaos_mutate(13)), d, seed=13)
            ood = gym.make("seal/ToolUse-v0", domains=(domain,), split="ood", max_steps=40)
            play(ood, OracleAgent(mutate=chaos_mutate(14)), d, seed=14)
            return d.hexdigest()

        yield f"tasks/{domain}", tasks
        yield f"oracle/{domain}", oracle
        yield f"random/{domain}", random_agent
        yield f"chaos/{domain}", chaos

    def evolving() -> str:
        d = Digest()
        env = gym.make("seal/ToolUse-v0", max_steps=12)
        co = CoEvolution()
        for batch in range(3):
            infos = []
            for seed in range(8):
                infos.append(play(env, RandomAgent(100 * batch + seed), d, seed=100 * batch + seed))
            d.add([p.to_dict() for p in co.evolve(infos)], co.surface.to_json())
            co.apply(env)
        play(env, OracleAgent(mutate=chaos_mutate(5)), d, seed=5)
        return d.hexdigest()

    yield "evolving/mixture", evolving


class GroundTruthAgent:
    """The BFCL ground truth in BFCL's Python syntax, then "Done." after each turn."""

    def __init__(self):
        self.queue: list[str] | None = None

    def reset(self) -> None:
        self.queue = None

    def act(self, env: gym.Env, info: dict) -> str:
        from seal_envs.bfcl.compare import format_call

        if self.queue is None:
            self.queue = [a for t in env.unwrapped.task.turns for a in [format_call(c) for c in t.plan] + ["Done."]]
        return self.queue.pop(0) if self.queue else "Done."


def bfcl_cases() -> Iterator[tuple[str, Callable[[], str]]]:
    def tasks() -> str:
        from seal_envs.bfcl.source import build_task

        d = Digest()
        for entry in BFCL_IDS:
            d.add(build_task(entry).to_dict())
        return d.hexdigest()

    def ground_truth() -> str:
        from seal_envs.bfcl.source import build_task
        from seal_envs.registration import make_bfcl_env as make_env

        d = Digest()
        env = make_env(split="all")
        for entry in BFCL_IDS:
            play(env, GroundTruthAgent(), d, options={"task": build_task(entry)})
        return d.hexdigest()

    def chaos() -> str:
        from dataclasses import replace

        from seal_envs.bfcl.source import build_task
        from seal_envs.registration import make_bfcl_env as make_env

        d = Digest()
        env = make_env(split="all", max_steps=50)
        for k, entry in enumerate(BFCL_IDS):
            play(env, OracleAgent(mutate=chaos_mutate(k)), d, options={"task": build_task(entry)})
        for k, entry in enumerate(BFCL_IDS[::4]):
            play(env, RandomAgent(k, answer_prob=0.15), d, options={"task": build_task(entry)})
        task = build_task("multi_turn_base_7")  # not a stock task: its reference is replayed afresh
        other = replace(task, turns=task.turns[:1] + tuple(replace(t, plan=t.plan[:1]) for t in task.turns[1:]))
        play(env, GroundTruthAgent(), d, options={"task": other})
        lite = make_env(split="train", surface="observation_lite", max_steps=50)
        play(lite, OracleAgent(mutate=chaos_mutate(99)), d, options={"task": build_task("multi_turn_miss_func_7")})
        for seed in range(3):  # sampled from the train split
            play(make_env(max_steps=20), OracleAgent(mutate=chaos_mutate(seed)), d, seed=seed)
        return d.hexdigest()

    yield "bfcl/tasks", tasks
    yield "bfcl/ground_truth", ground_truth
    yield "bfcl/chaos", chaos


def all_cases() -> dict[str, Callable[[], str]]:
    from seal_envs.bfcl.loader import available

    return dict(native_cases()) | (dict(bfcl_cases()) if available() else {})


PINNED: dict[str, str] = {
    'bfcl/chaos': '76f462b59278d06a2335a08562ddd27c64318614d87d10d96e81fb93850ccd84',
    'bfcl/ground_truth': '7edca9e6926b76f8e9b612b24fa54f2f48e96b7949bf7bf1dd021fbd17a93bba',
    'bfcl/tasks': '05f10616a463d7b840d9a7b7cb63d06d6eb25c90425721a301ecddfe301c47ce',
    'chaos/bank': 'd82096026ab5a460da433756a57b52d78d9ab3696a495e14556e9b31b43d33d7',
    'chaos/calendar': '7840ef97c64609da750f0e4bc0e23b62883be2d308fac304676021f66cb55554',
    'chaos/files': '883fb062666e34de4c1b6000aa955de1b8a5f49ff6318eb4ef6227e2fc98f6b9',
    'chaos/shop': '4df16e5252e6d7d333dbac41a65e52970760925b6f900db1651712114bbe3284',
    'chaos/smarthome': '006cdbb5583a7a7af8a096de9b4bc2ca5bc9cb96e7c07d52eaf42702f52283d7',
    'chaos/travel': '71d0bfe4f784751aaa497c3d0a4b27be5eebb548ea17996921faa6b8fdb6e1ab',
    'evolving/mixture': 'd12c6dd2cfc27ee18b422326c254eb237c7128a6d0016604b05d18a392ae7b67',
    'oracle/bank': '4423391e59526493d5657410b96697319055a6a5960f635cc0970d52c02f6bad',
    'oracle/calendar': 'd7a76c7e4c168717fc0c3ba3f0519e02f6c602c9c541d778586ea61419ca1977',
    'oracle/files': '6de6edb0bf8a45103dbb9ff35d749ab4fd98ac9152cdc7dfbc5a70485bc8d0a7',
    'oracle/shop': '4996153993b57b48c679a4c89b2860e479ec7a2ab4ab9d7064fcafc734cc8d2e',
    'oracle/smarthome': '90819b0f24e85ba81e3a6d06914581a5d41ecd8cb0354aa9935e199e8428a8e1',
    'oracle/travel': 'ac9f7a57bba9d3a1fef79988df7d7235f83589991b27c9b51726b3255a35f715',
    'random/bank': '46dbfd9d7d66f807cb84b4f661743199bae0f10d33ae7ce3055d2d1a4be0ddde',
    'random/calendar': '5422ae59d2fda41c60e6d64ac68a98b1284604baecdc8e86e398a9ac10bac994',
    'random/files': 'e1848302d7864e2f2956df9e0cdb003d0e26bd415de3287046455935bd0dfccc',
    'random/shop': '746cf8945957c4ab171f35193a5a50a2cb4599c001a702d0475faf3d13ffc0fc',
    'random/smarthome': '65d4c8142566709a9f71ef77f0e71a5e4300fdff06c006d814aaebb91e352e12',
    'random/travel': '7d72bd3f0f78f2995ea8b89327c5b90aec10004ed28309167305f2352c81e085',
    'tasks/bank': 'e19fe772e685c0d4b5e020c643bdb91deca740ce65d06b36f5c337b4e09f9c3a',
    'tasks/calendar': '6e4e77fefbcbd73925fa49e8d57fc154308599be7d84c535e93593247dba7e48',
    'tasks/files': '879c9ae196e7abbcc206b7cadb5238631a17c8b41dd686458518bd23b7ef8fa0',
    'tasks/shop': '4cb44a5774b96626213b5d5dbfbbfb222419894f29d5345369c33d68c6f25a58',
    'tasks/smarthome': 'e71dc7637cc9b1ef4ddd0f1af3d7cf8ff9eba4309c416ee42ff168674c3c6dee',
    'tasks/travel': 'e5716d0d2b51eeb681e566d7c22ac273417ede81569ddf4e5397d53becd1bd79',
}


CASES = all_cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_pinned(name):
    if name not in PINNED:
        pytest.skip(f"{name} is not pinned (bfcl-eval missing when the pins were written?)")
    assert CASES[name]() == PINNED[name], f"{name}: what an env user observes changed"


def test_every_case_pinned():
    assert set(PINNED) >= set(CASES), sorted(set(CASES) - set(PINNED))


@pytest.mark.parametrize("domain", DOMAINS + ("bfcl",))
def test_episodes_share_no_mutable_state(domain):
    """Vandalising every ``info`` an episode returns changes none of its later observations, nor
    the next episodes of the same task (references, rendered tools, tasks are never shared
    mutably), nor the task itself."""
    if domain == "bfcl":
        bfcl = pytest.importorskip("seal_envs.bfcl.source")
        pytest.importorskip("bfcl_eval")
        from seal_envs.registration import make_bfcl_env

        tasks = [bfcl.build_task("multi_turn_miss_func_7"), bfcl.build_task("multi_turn_base_49")]
        make = lambda: make_bfcl_env(split="train", max_steps=50)  # noqa: E731
    else:
        tasks = [generate(domain, 3, 3, "train"), generate(domain, 4, 4, "train")]
        make = lambda: gym.make("seal/ToolUse-v0", domains=(domain,), max_steps=40)  # noqa: E731
    before = [canonical_json(t.to_dict()) for t in tasks]
    digests = []
    for vandal in (False, True, False):
        d = Digest()
        env = make()
        for round_ in range(2):
            for k, task in enumerate(tasks):
                play(env, OracleAgent(mutate=chaos_mutate(k)), d, options={"task": task}, vandal=vandal)
                play(env, OracleAgent(), d, options={"task": task}, vandal=vandal)
        digests.append(d.hexdigest())
    assert digests[0] == digests[1] == digests[2]
    assert [canonical_json(t.to_dict()) for t in tasks] == before


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(CASES)
    for name in names:
        print(f"    {name!r}: {CASES[name]()!r},", flush=True)
