"""Two CPU processes under ``accelerate launch``: both ranks end with the same surface and evolver.

``accelerate launch --cpu --num_processes 2`` starts several CPU processes only through MPI
(``mpirun``); without it, it runs one process that waits for a group that never forms. The
torchrun-based launcher (``--multi_gpu``) with no visible GPU and ``use_cpu=True`` in the config
starts two processes in a gloo group, which is the CPU equivalent used here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from seal_helpers import free_port, launch

pytest.importorskip("accelerate")
pytest.importorskip("trl")

SCRIPT = Path(__file__).parent / "scripts" / "two_rank_train.py"


@pytest.mark.slow
def test_two_processes_agree_on_surface_and_evolver(tmp_path):
    launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable)) or shutil.which("accelerate")
    assert launcher, "the accelerate CLI is not installed"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "CUDA_VISIBLE_DEVICES": ""}
    launch(lambda: [launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                    "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port()),
                    str(SCRIPT), str(tmp_path)], env)
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    assert all(r["world"] == 2 and r["step"] == 2 for r in ranks)
    assert ranks[0]["surface"] == ranks[1]["surface"]
    assert ranks[0]["evolver"] == ranks[1]["evolver"]
    assert json.loads(ranks[0]["surface"])["version"] > 0  # patches were applied, identically
    assert ranks[0]["labels"] != ranks[1]["labels"]  # the ranks saw different diagnoses
    for r in ranks:  # the KV-cached engine served the DDP-wrapped policy, reusing each episode's cache
        engine = r["engine"]
        assert engine["uncached_because"] == [] and all(1 <= n <= 4 for n in engine["lengths"])
        assert engine["reused"] > 0 and engine["left"] == 0
