"""seal_envs.report: the run-folder format, the series behind every plot, the evolution report."""

import json

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401
from seal_envs.agents import OracleAgent, RandomAgent, run_episode
from seal_envs.core.diagnosis import LABELS
from seal_envs.coevolution import CoEvolution
from seal_envs.core.evolver import Evolver
from seal_envs.report import (
    label_series, plot_labels, plot_success, plot_surface_timeline, success_series, surface_series,
    write_evolution_report, write_report,
)
from seal_envs.run_folder import RunWriter, episode_metrics, load_run

PNG = b"\x89PNG\r\n\x1a\n"


def fake_training(run_dir, steps=6, episodes=6):
    """A stand-in for a trainer: random agents first, then the oracle; the surface evolves each step."""
    co = CoEvolution(Evolver(window=1, min_episodes=4, fade_patience=1))
    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    writer = RunWriter(run_dir)
    for step in range(steps):
        infos, rewards = [], []
        for e in range(episodes):
            agent = RandomAgent(step * 100 + e) if step < steps // 2 else OracleAgent()
            reward, info, _ = run_episode(env, agent, seed=step * 100 + e)
            infos.append(info)
            rewards.append(reward)
        writer.log(step, episode_metrics(infos, rewards) | {"loss": 0.1 * step})
        patches = co.evolve(infos)
        co.apply(env)
        writer.log_patches(step, patches, update=co.evolver.updates)
    writer.save_evolver(co.evolver)
    writer.save_surface(co.surface)
    return co


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("run")
    env = fake_training(path)
    return path, env


def test_episode_metrics_hand_computed():
    info = lambda passed, labels, v=0: {"verdict": {"passed": passed, "progress": float(passed)},  # noqa: E731
                                        "step_labels": [{"label": lb} for lb in labels], "surface_version": v}
    m = episode_metrics([info(True, ["ok", "ok"]), info(False, ["format_error", "ok"], 3)], rewards=[1.0, 0.0])
    assert m["episodes"] == 2 and m["success_rate"] == 0.5 and m["reward"] == 0.5 and m["surface_version"] == 3
    assert m["labels/ok"] == 0.75 and m["labels/format_error"] == 0.25
    assert {k for k in m if k.startswith("labels/")} == {f"labels/{lb}" for lb in LABELS}
    with pytest.raises(ValueError):
        episode_metrics([])


def test_run_folder_format(run):
    path, co = run
    lines = (path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 6
    for n, line in enumerate(lines):
        rec = json.loads(line)
        assert rec["step"] == n
        assert {"success_rate", "reward", "surface_version"} <= set(rec)
        assert sum(rec[f"labels/{lb}"] for lb in LABELS) == pytest.approx(1.0)
    history = json.loads((path / "surface_history.json").read_text())
    assert history, "the random phase should have raised some channel"
    assert [{k: h[k] for k in ("channel", "scope", "level", "reason")} for h in history] == \
        [{k: e[k] for k in ("channel", "scope", "level", "reason")} for e in co.evolver.events]
    assert all({"step", "update"} <= set(h) for h in history)
    loaded = load_run(path)
    assert loaded["evolver"]["updates"] == 6 and loaded["surface"]["version"] == co.surface.version


def test_plots_return_the_data_they_drew(run, tmp_path):
    path, co = run
    metrics = load_run(path)["metrics"]
    s = plot_success(metrics, tmp_path / "s.png")
    assert s["step"] == list(range(6))
    assert s["success_rate"] == [m["success_rate"] for m in metrics]
    assert s["success_rate"][-1] == 1.0                          # the oracle phase
    assert (tmp_path / "s.png").read_bytes().startswith(PNG)
    lab = plot_labels(metrics, tmp_path / "l.png")
    assert lab["step"] == list(range(6)) and lab["labels"]["ok"][-1] == 1.0
    assert list(lab["labels"]) == [lb for lb in LABELS if lb in lab["labels"]]
    for lb, values in lab["labels"].items():
        assert values == [m[f"labels/{lb}"] for m in metrics]
    assert (tmp_path / "l.png").read_bytes().startswith(PNG)
    history = load_run(path)["surface_history"]
    sur = plot_surface_timeline(history, tmp_path / "t.png", start=0, end=5)
    final = {name: d["level"][-1] for name, d in sur["scopes"].items()}
    assert {k: v for k, v in final.items() if v} == {f"{c}/{s}": lv for c, s, lv in co.surface.levels}
    assert all(d["x"][0] == 0 and d["x"][-1] == 5 for d in sur["scopes"].values())
    assert (tmp_path / "t.png").read_bytes().startswith(PNG)


def test_surface_series_hand_computed():
    history = [
        {"step": 2, "channel": "affordance", "scope": "transfer", "level": 1},
        {"step": 4, "channel": "recovery", "scope": "tool_error", "level": 1},
        {"step": 5, "channel": "affordance", "scope": "transfer", "level": 2},
        {"step": 9, "channel": "affordance", "scope": "transfer", "level": 1},
    ]
    s = surface_series(history, start=0, end=10)
    assert s["x_key"] == "step"
    assert s["scopes"] == {
        "affordance/transfer": {"x": [0, 2, 5, 9, 10], "level": [0, 1, 2, 1, 1]},
        "recovery/tool_error": {"x": [0, 4, 10], "level": [0, 1, 1]},
    }
    by_update = surface_series([{"update": 3, "channel": "constraint", "scope": "t", "level": 1}])
    assert by_update["x_key"] == "update" and by_update["scopes"]["constraint/t"] == {"x": [2, 3], "level": [0, 1]}


def test_label_series_skips_labels_never_seen():
    metrics = [{"step": 0, "labels/ok": 0.5, "labels/format_error": 0.5, "labels/env_error": 0.0},
               {"step": 1, "labels/ok": 1.0}]
    assert label_series(metrics) == {"step": [0, 1], "labels": {"ok": [0.5, 1.0], "format_error": [0.5, 0.0]}}
    assert success_series(metrics) == {"step": [], "success_rate": [], "reward": []}


def test_write_report(run, tmp_path):
    path, co = run
    out = write_report(path, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md == out["markdown"]
    assert "6 logged steps (0 to 5)" in md and "| success_rate |" in md and "## Turn labels" in md
    assert f"{len(co.evolver.events)} surface patches" in md
    assert "![success](success.png)" in md
    series = json.loads((tmp_path / "rep" / "series.json").read_text())
    assert series["success"]["success_rate"] == out["series"]["success"]["success_rate"]
    for name in ("success", "labels", "surface"):
        assert (tmp_path / "rep" / f"{name}.png").read_bytes().startswith(PNG)


def test_report_without_matplotlib(run, tmp_path, monkeypatch):
    import sys

    path, _ = run
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)   # import fails as if not installed
    out = write_report(path, tmp_path / "rep")
    assert not list((tmp_path / "rep").glob("*.png"))
    assert "install matplotlib" in out["markdown"] and out["series"]["success"]["step"] == list(range(6))
    ev = write_evolution_report(Evolver(), None, tmp_path / "ev")
    assert ev["png"] is None and (tmp_path / "ev" / "evolution.json").is_file()


def test_load_run_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        load_run(tmp_path)
    (tmp_path / "metrics.jsonl").write_text('{"step": 0}\nnot json\n')
    with pytest.raises(ValueError, match="metrics.jsonl:2"):
        load_run(tmp_path)


def test_write_evolution_report_from_env_and_from_evolver(run, tmp_path):
    _, co = run
    out = write_evolution_report(co, out_dir=tmp_path / "a")
    record = json.loads((tmp_path / "a" / "evolution.json").read_text())
    assert record == json.loads(json.dumps(out["record"]))
    assert record["surface_history"] == co.evolver.events
    assert record["surface"]["version"] == co.surface.version
    assert record["updates"] == 6
    # window=1: the evolver keeps the last update's label counts only
    assert [r["update"] for r in record["label_distribution"]] == [6]
    assert record["label_distribution"][0]["counts"] == co.evolver.label_counts()[-1]
    final = {n: d["level"][-1] for n, d in out["surface_series"]["scopes"].items() if d["level"][-1]}
    assert final == {f"{c}/{s}": lv for c, s, lv in co.surface.levels}
    assert out["label_series"]["step"] == [6]
    assert out["png"] and (tmp_path / "a" / "evolution.png").read_bytes().startswith(PNG)
    same = write_evolution_report(co.evolver, co.surface, tmp_path / "b")
    assert same["record"] == out["record"]
    with pytest.raises(TypeError):
        write_evolution_report(object(), None, tmp_path / "c")


def test_trainer_output_folder_reads_as_a_run(tmp_path):
    """No metrics.jsonl: the latest checkpoint's trainer_state.json and seal_state.json."""
    from seal_envs.core.surface import CANONICAL, SurfacePatch

    ev = Evolver()
    ev.events = [{"update": 2, "channel": "affordance", "scope": "transfer", "level": 1, "reason": "r"}]
    ev.updates = 3
    surface = CANONICAL.apply(SurfacePatch("affordance", "transfer", 1, "r"))
    log = [{"step": s, "epoch": 0.1 * s, "loss": 0.5, "reward": s / 4, "seal/success_rate": s / 4,
            "seal/label_frac/ok": 0.25 * s, "seal/label_frac/format_error": 1 - 0.25 * s,
            "seal/surface_version": float(s > 2)} for s in (1, 2, 3)] + [{"step": 3, "train_runtime": 9.0}]
    for n, entries in ((1, log[:1]), (3, log)):
        ck = tmp_path / f"checkpoint-{n}"
        ck.mkdir()
        (ck / "trainer_state.json").write_text(json.dumps({"global_step": n, "log_history": entries}))
        (ck / "seal_state.json").write_text(json.dumps(
            {"format": 1, "coevolution": {"evolver": ev.state_dict(), "surface": surface.to_json()}}))
    run = load_run(tmp_path)
    assert [m["step"] for m in run["metrics"]] == [1, 2, 3]
    assert run["metrics"][2]["success_rate"] == 0.75 and run["metrics"][2]["labels/ok"] == 0.75
    assert run["metrics"][0]["loss"] == 0.5 and run["surface"]["version"] == 1
    out = write_report(tmp_path, tmp_path / "rep")
    assert out["series"]["labels"]["labels"]["format_error"] == [0.75, 0.5, 0.25]
    assert out["series"]["surface"]["x_key"] == "update"
    assert out["series"]["surface"]["scopes"]["affordance/transfer"]["level"][-1] == 1
    assert "| affordance | transfer | 1 |" in out["markdown"]


def test_markdown_prints_surface_versions_as_integers(tmp_path):
    """TRL logs the mean of seal/surface_version (0.0, 2.0): the summary said 'surface version 0.0' (issue 20)."""
    from seal_envs.report import summary_markdown
    from seal_envs.run_folder import metrics_from_log_history

    log = [{"step": s, "seal/success_rate": 0.5, "reward": 0.5, "seal/surface_version": v}
           for s, v in ((1, 0.0), (2, 1.9999999))]
    metrics = metrics_from_log_history(log)
    assert [m["surface_version"] for m in metrics] == [0, 2] and all(type(m["surface_version"]) is int for m in metrics)
    text = summary_markdown({"dir": str(tmp_path), "metrics": metrics, "surface_history": []})
    assert "surface version 2 at the end" in text
    float_file = [{"step": 1, "success_rate": 0.5, "reward": 0.5, "surface_version": 0.0}]  # an old metrics.jsonl
    assert "surface version 0 at the end" in summary_markdown({"dir": "r", "metrics": float_file, "surface_history": []})
    assert "surface version n/a" in summary_markdown({"dir": "r", "metrics": [{"step": 1}], "surface_history": []})
