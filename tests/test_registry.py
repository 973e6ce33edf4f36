"""The conformance checks of seal_envs.testing over every registered native id."""

import gymnasium as gym
import pytest

import seal_envs
from seal_envs.testing import (check_contract, check_determinism, check_do_nothing_fails, check_oracle_solves_all,
                               check_surface_invariance)

NATIVE_IDS = [i for i in seal_envs.registered_ids() if "BFCL" not in i]


def test_ids_registered():
    assert "seal/ToolUse-v0" in NATIVE_IDS and "seal/ToolUse-OOD-v0" in NATIVE_IDS
    assert len(NATIVE_IDS) >= 3


@pytest.mark.parametrize("env_id", NATIVE_IDS)
def test_contract(env_id):
    check_contract(env_id)


@pytest.mark.parametrize("env_id", ["seal/ToolUse-v0", "seal/ToolUse-OOD-v0"])
def test_determinism_across_processes(env_id):
    check_determinism(env_id, seeds=range(4))


@pytest.mark.parametrize("env_id", NATIVE_IDS)
def test_surface_changes_only_what_is_shown(env_id):
    """An evaluation id (ood) holds the canonical surface, so its tasks are checked on train."""
    train = {} if gym.spec(env_id).kwargs.get("split", "train") == "train" else {"split": "train"}
    assert check_surface_invariance(env_id, seeds=range(4), **train) > 0


def test_surface_invariance_check_bites(monkeypatch):
    """A surface that leaks into what happens (here the reported difficulty) is caught."""
    from seal_envs.env import ToolUseEnv

    info = ToolUseEnv._info
    monkeypatch.setattr(ToolUseEnv, "_info", lambda self, label: info(self, label) | {
        "difficulty": self.task.difficulty + bool(self.surface.levels)})
    with pytest.raises(AssertionError, match="the surface changed what happened"):
        check_surface_invariance("seal/ToolUse-Bank-v0", seeds=(0,))


@pytest.mark.slow
def test_oracle_solves_every_task_of_every_split():
    """Train (400), test and ood of the mixture, which covers every native domain."""
    assert check_oracle_solves_all("seal/ToolUse-v0") == 800
    assert check_oracle_solves_all("seal/ToolUse-OOD-v0", splits=("ood",)) == 200


@pytest.mark.slow
def test_no_task_passes_without_work():
    assert check_do_nothing_fails("seal/ToolUse-v0") == 800
    assert check_do_nothing_fails("seal/ToolUse-OOD-v0", splits=("ood",)) == 200


def test_make_without_import(tmp_path):
    import subprocess
    import sys

    code = "import gymnasium as gym; e = gym.make('seal_envs:seal/ToolUse-v0'); print(e.reset(seed=0)[1]['task_id'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip().count("/") == 3


def test_train_split_has_exactly_400_fixed_tasks():
    env = gym.make("seal/ToolUse-v0").unwrapped
    ts = env.task_set
    assert len(ts) == 400
    assert ts[17].to_dict() == ts.with_split("train")[17].to_dict()
    assert {ts.slot(i).difficulty for i in range(len(ts))} == {1, 2, 3, 4}
