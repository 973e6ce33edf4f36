"""BFCL evaluation reports accuracy per category, the leaderboard's overall, and official progress."""

import pytest

pytest.importorskip("bfcl_eval")

from seal_envs.bfcl import loader  # noqa: E402
from seal_envs.eval import EvalResult, evaluate  # noqa: E402


class PassFirstCall:
    """Oracle-free, deterministic: on base entries plays the ground truth, elsewhere answers at once."""

    def __init__(self, seed):
        self.turn_calls = None

    def reset(self):
        pass

    def act(self, env, info):
        from seal_envs.bfcl.compare import format_call

        base = env.unwrapped
        if base.task.template != "base":
            return "I cannot help."
        if self.turn_calls is None or self.turn_calls[0] != base.user_turn:
            self.turn_calls = (base.user_turn, list(base.task.turns[base.user_turn].plan))
        return format_call(self.turn_calls[1].pop(0)) if self.turn_calls[1] else "Done."


def test_accuracy_per_category_and_overall_as_the_leaderboard():
    indices = [i for c in loader.CATEGORIES for i in range(100 * loader.CATEGORIES.index(c),
                                                           100 * loader.CATEGORIES.index(c) + 2)]
    result = evaluate("seal/BFCL-MultiTurn-v0", PassFirstCall, split="test", indices=indices, batch_size=8)
    table = result.bfcl_categories()
    assert list(table) == [*sorted(loader.CATEGORIES), "overall"]
    assert table["base"]["accuracy"] == 1.0 and table["base"]["official_progress"] == 1.0
    assert table["miss_param"]["accuracy"] == 0.0 and table["miss_param"]["official_progress"] == 0.0
    assert table["overall"]["accuracy"] == pytest.approx(0.25)  # the mean of four categories
    assert result.official_progress == pytest.approx(0.25)
    assert "| overall | 8 | 0.2500 | 0.2500 |" in result.to_markdown()
    again = EvalResult.from_dict(result.to_dict())
    assert again.bfcl_categories() == table and again.to_dict()["bfcl_categories"] == table
    assert all(len(e["official_turn_tags"]) >= 1 for e in result.episodes)
