"""The paired BFCL benchmark plays each side's whole episodes and the warm ones really reuse the
reference replay (timings themselves are not asserted: they belong to the benchmark's run)."""

import pytest

pytest.importorskip("bfcl_eval")


def test_paired_times_every_entry_on_both_sides_and_warm_episodes_hit_the_replay_cache(capsys, monkeypatch):
    from benchmarks import bench_bfcl
    from seal_envs.bfcl.source import _stock_reference

    replays = []
    real = bench_bfcl.our_episode

    def counting(env, task, gt, step_times, warm=False):
        before = _stock_reference.cache_info()
        real(env, task, gt, step_times, warm=warm)
        replays.append((warm, _stock_reference.cache_info().misses - before.misses if warm else None))

    monkeypatch.setattr(bench_bfcl, "our_episode", counting)
    times = bench_bfcl.paired(["base", "miss_func"], repeat=2, limit=2)
    assert {k: len(v) for k, v in times.items()} == {"cold": 4, "warm": 4, "bfcl": 4}
    assert all(0 < t < float("inf") for v in times.values() for t in v)
    warm = [misses for w, misses in replays if w]
    assert len(warm) == 2 * 2 * 4 and warm[1::2] == [0] * (2 * 4)  # the second warm episode of a pair replays nothing
    assert _stock_reference.cache_info().currsize == 0  # a cold episode after it pays for the replay again
    table = capsys.readouterr().out
    assert "one cold, seven warm" in table
    by_category = [line.split(" | ") for line in table.splitlines() if line.startswith(("| base ", "| miss_func "))]
    assert [(row[0], row[1]) for row in by_category] == [("| base", "2"), ("| miss_func", "2")]
    cold = sum(times["cold"][:2]) / sum(times["bfcl"][:2])
    assert by_category[0][2] == f"{cold:.3f}"  # the category's cold sum over bfcl-eval's
