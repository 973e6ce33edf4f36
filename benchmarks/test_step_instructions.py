"""The instruction-count benchmark replays what it recorded: every step but each episode's last, or
only the resets (callgrind itself is not run here: three valgrind runs take minutes)."""

import json


def test_replay_plays_every_step_but_each_episodes_last(tmp_path, capsys):
    from benchmarks.bench_step_instructions import record, replay

    path = tmp_path / "bank.json"
    record("bank", 5, path)
    actions = json.loads(path.read_text())
    assert len(actions) == 5 and all(len(a) >= 2 for a in actions)
    replay("bank", str(path), "steps")
    assert int(capsys.readouterr().out.split()[-1]) == sum(len(a) - 1 for a in actions)
    replay("bank", str(path), "resets")
    assert int(capsys.readouterr().out.split()[-1]) == 0

