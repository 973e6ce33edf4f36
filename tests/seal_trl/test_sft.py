"""Oracle episodes as an SFT dataset in TRL's conversational form, trained by TRL's own SFTTrainer (issue 18)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("trl")

from seal_trl.play.data import make_sft_dataset  # noqa: E402
from seal_trl.agent.tiny import load_model_and_tokenizer  # noqa: E402


def test_sft_rows_are_whole_passing_oracle_conversations():
    ds = make_sft_dataset("seal/ToolUse-Bank-v0", num_rows=6)
    assert len(ds) == 6 and {"messages", "tools", "task_id", "seed"} <= set(ds.column_names)
    for row in ds:
        roles = [m["role"] for m in row["messages"]]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant" and "tool" in roles
        calls = [c for m in row["messages"] if m["tool_calls"] for c in m["tool_calls"]]
        assert calls and all(json.loads(c["function"]["arguments"]) is not None for c in calls)
        assert {t["function"]["name"] for t in json.loads(row["tools"])} >= {c["function"]["name"] for c in calls}


@pytest.mark.slow
def test_trl_sft_trainer_learns_the_oracle_conversations(tmp_path):
    from trl import SFTConfig, SFTTrainer

    model, tokenizer = load_model_and_tokenizer("tiny")
    ds = make_sft_dataset("seal/ToolUse-Bank-v0", num_rows=8)
    trainer = SFTTrainer(model=model, processing_class=tokenizer, train_dataset=ds, args=SFTConfig(
        output_dir=str(tmp_path), use_cpu=True, bf16=False, max_steps=12, per_device_train_batch_size=4,
        learning_rate=3e-3, report_to="none", save_strategy="no", logging_steps=1, max_length=2048,
        disable_tqdm=True))
    text = tokenizer.decode(trainer.train_dataset[0]["input_ids"])
    assert "<tool_call>" in text and '"account_id"' in text  # the calls and the tool list reached the template
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 12 and losses[-1] < 0.8 * losses[0], losses
