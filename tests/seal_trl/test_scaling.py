"""Scaling out (docs/scaling.md): the shipped accelerate configs (configs/accelerate/*.yaml) load
and validate as ``accelerate launch`` reads them, and the CPU one runs the stock-TRL path on two
processes (gloo), where every rank ends with the same evolved surface.

GPU, DeepSpeed and vLLM runs are not possible on this machine; their configs are only checked
here. FSDP on CPU is not possible through accelerate (docs/scaling.md, "What was tested").
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from seal_helpers import free_port, launch

yaml = pytest.importorskip("yaml")
pytest.importorskip("accelerate")

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs" / "accelerate"
SCRIPT = Path(__file__).parent / "scripts" / "two_rank_stock.py"

# name -> what `accelerate launch --config_file` must make of it
EXPECTED = {
    "multi_gpu": {"distributed_type": "MULTI_GPU", "launcher": "multi_gpu", "mixed_precision": "bf16"},
    "deepspeed_zero2": {"distributed_type": "DEEPSPEED", "launcher": "use_deepspeed", "mixed_precision": "bf16",
                        "zero_stage": 2},
    "deepspeed_zero3": {"distributed_type": "DEEPSPEED", "launcher": "use_deepspeed", "mixed_precision": "bf16",
                        "zero_stage": 3},
    "fsdp": {"distributed_type": "FSDP", "launcher": "use_fsdp", "mixed_precision": "bf16", "fsdp_version": 2},
    "cpu_2proc": {"distributed_type": "MULTI_GPU", "launcher": "multi_gpu", "mixed_precision": "no",
                  "num_processes": 2, "use_cpu": True},
}
REQUIRED = ("compute_environment", "distributed_type", "mixed_precision", "num_machines", "num_processes",
            "machine_rank", "use_cpu")


def test_the_shipped_configs_are_exactly_the_documented_ones():
    assert sorted(p.stem for p in CONFIGS.glob("*.yaml")) == sorted(EXPECTED)
    doc = (ROOT / "docs" / "scaling.md").read_text()
    for name in EXPECTED:
        assert f"configs/accelerate/{name}.yaml" in doc


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_loads_and_validates_as_accelerate_launch_reads_it(name):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    path = CONFIGS / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text())
    want = EXPECTED[name]
    assert not [k for k in REQUIRED if k not in raw], f"{path} misses keys accelerate needs"
    assert raw["compute_environment"] == "LOCAL_MACHINE" and raw["num_machines"] == 1
    assert raw["distributed_type"] == want["distributed_type"]
    assert raw["use_cpu"] is want.get("use_cpu", False)
    config = load_config_from_file(str(path))  # accelerate's own loader: refuses unknown keys
    assert config.distributed_type.value == want["distributed_type"]
    args = launch_command_parser().parse_args(["--config_file", str(path), "train.py"])
    args, _, _ = _validate_launch_command(args)  # what `accelerate launch` does before it starts anything
    assert getattr(args, want["launcher"]) is True
    assert args.mixed_precision == want["mixed_precision"]
    assert args.num_processes == want.get("num_processes", 8)
    if "zero_stage" in want:
        assert args.zero_stage == want["zero_stage"] and raw["deepspeed_config"]["zero_stage"] == want["zero_stage"]
    if "fsdp_version" in want:
        assert int(args.fsdp_version) == want["fsdp_version"]
        assert raw["fsdp_config"]["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"


@pytest.mark.slow
def test_stock_trl_path_evolves_one_surface_on_two_processes(tmp_path):
    """``accelerate launch --config_file configs/accelerate/cpu_2proc.yaml``: an unmodified
    ``GRPOTrainer`` with ``make_rollout_func(coevolution=...)``, two steps on two gloo processes
    whose scripted policies differ. Both ranks apply the same patches; an evolver fed from one
    process's episodes alone (the control) would not."""
    pytest.importorskip("trl")
    launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable)) or shutil.which("accelerate")
    assert launcher, "the accelerate CLI is not installed"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "CUDA_VISIBLE_DEVICES": ""}
    launch(lambda: [launcher, "launch", "--config_file", str(CONFIGS / "cpu_2proc.yaml"),
                    "--main_process_port", str(free_port()), str(SCRIPT), str(tmp_path)], env)
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert all(r["world"] == 2 and r["step"] == 2 and r["updates"] == 2 for r in ranks)
    assert all(r["distributed_type"].endswith("MULTI_CPU") for r in ranks)
    assert ranks[0]["surface"] == ranks[1]["surface"]
    assert ranks[0]["evolver"] == ranks[1]["evolver"]
    assert json.loads(ranks[0]["surface"])["version"] > 0  # the surface changed, identically on both ranks
    for r in ranks:  # every training env of every rank shows that surface
        assert r["env_surfaces"] and set(r["env_surfaces"]) == {ranks[0]["surface"]}
    assert ranks[0]["labels"] != ranks[1]["labels"]  # the ranks saw different diagnoses ...
    assert ranks[0]["local_surface"] != ranks[1]["local_surface"]  # ... so per-process evolvers would diverge
