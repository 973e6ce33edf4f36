"""The two named BFCL splits of the paper's code: the repository's JSON and the run's own."""

import json
import pathlib

import gymnasium as gym
import pytest

pytest.importorskip("bfcl_eval")

import seal_envs  # noqa: F401,E402  (registers the ids)
from seal_envs.bfcl import loader  # noqa: E402
from seal_envs.bfcl.source import BFCLTaskSet  # noqa: E402

SHARED = pathlib.Path(__file__).parents[3] / "shared" / "data" / "bfcl_seal_parquet_split.json"
PACKAGED = pathlib.Path(loader.__file__).parent / "bfcl_seal_parquet_split.json"


def test_the_runs_split_by_name():
    data = json.loads(PACKAGED.read_text())
    if SHARED.exists():
        assert json.loads(SHARED.read_text()) == data
    sizes = {part: len(BFCLTaskSet(part, split_source="seal_run")) for part in ("train", "val", "test", "all")}
    assert sizes == {"train": 400, "val": 100, "test": 300, "all": 800}
    for part in ("train", "val", "test"):
        assert set(BFCLTaskSet(part, split_source="seal_run").ids) == set(data[part])
    parts = [set(BFCLTaskSet(p, split_source="seal_run").ids) for p in ("train", "val", "test")]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert len(parts[0] & set(BFCLTaskSet("train").ids)) == 206  # the JSON split differs (see the docs)


def test_val_and_test_envs_evaluate_on_the_canonical_surface():
    env = gym.make("seal/BFCL-MultiTurn-v0", split="val", split_source="seal_run").unwrapped
    assert env.evaluation and env.surface.frozen
    _, info = env.reset(options={"index": 0})
    assert info["task_id"] in loader.paper_split("seal_run")["val"]
    train = gym.make("seal/BFCL-MultiTurn-Base-v0", split_source="seal_run").unwrapped
    assert len(train.task_set) == sum(i.startswith("multi_turn_base_") for i in loader.paper_split("seal_run")["train"])
    with pytest.raises(ValueError, match="split must be one of"):
        BFCLTaskSet("val")  # the JSON split has no val part
    with pytest.raises(ValueError, match="split_source must be one of"):
        BFCLTaskSet("train", split_source="parquet")
