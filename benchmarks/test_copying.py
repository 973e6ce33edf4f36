"""The copying benchmark's measurement: channel probabilities and greedy success side by side."""

import pytest

@pytest.mark.slow
def test_measure_reads_the_channel_choice_and_greedy_success():
    from benchmarks.copying import measure
    from seal_trl.agent.tiny import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer("default")
    result = measure(model, tokenizer, 12)
    assert result["alert_calls"] > 0 and 0.0 < result["p_right_channel"] < 1.0
    assert 0.0 <= result["success"] <= 1.0 and set(result["by_difficulty"]) <= {"1", "2", "3", "4", 1, 2, 3, 4}
