"""Run by ``accelerate launch --num_processes 2 --cpu`` from test_accelerate.py: two SEAL steps, then every
rank writes its surface, evolver state and step count to ``<out>/rank<i>.json``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/seal_trl: the helpers

from seal_helpers import RankPolicy, cpu_args, small_model  # noqa: E402

from seal_trl.play.data import make_dataset  # noqa: E402
from seal_trl.agent.tiny import build_tiny_tokenizer  # noqa: E402
from seal_trl.training.trainer import SEALGRPOTrainer  # noqa: E402


def engine_probe(trainer, tok) -> dict:
    """Two turns of the trainer's own HF generation (the KV-cached engine) on the DDP-wrapped policy."""
    from seal_trl.play.generation import trainer_generate_fn

    gen = trainer_generate_fn(trainer)
    first = tok("<|user|>hi<|end|><|assistant|>", add_special_tokens=False)["input_ids"]
    out = gen.generate_episodes(["a", "b"], [first, first[:-1] + first], 4)
    grown = [first + out.ids[0] + first, first[:-1] + first + out.ids[1] + first]
    again = gen.generate_episodes(["a", "b"], grown, 4)
    gen.release(["a", "b"])
    return {"uncached_because": gen.why_uncached, "lengths": [len(x) for x in out.ids + again.ids],
            "reused": gen.engine.stats["reused"], "left": gen.engine.cached_tokens}


class LastRows(SEALGRPOTrainer):
    """Keeps the rows of the last generation batch, with the rollout's columns TRL merged in."""

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        self.last_rows = inputs
        return out


def main(out: Path) -> None:
    tok = build_tiny_tokenizer()
    args = cpu_args(out, per_device_train_batch_size=2, num_generations=2, max_steps=2, weighting="step",
                    evolver_raise_threshold=0.2, evolver_fade_threshold=0.0, budget_normalize=True,
                    ddp_backend="gloo")
    trainer = LastRows(model=small_model(tok), args=args, train_dataset=make_dataset(num_rows=8),
                       processing_class=tok)
    policy = RankPolicy(tok, trainer.accelerator.process_index)
    trainer._seal_generate_fn = policy
    policy.rollout = trainer.seal_rollout
    trainer.train()
    state = {"engine": engine_probe(trainer, tok), "rank": trainer.accelerator.process_index, "world": trainer.accelerator.num_processes,
             "step": trainer.state.global_step, "surface": trainer.seal_coevolution.surface.to_json(),
             "evolver": trainer.seal_coevolution.evolver.to_json(), "generate_calls": policy.calls,
             "labels": sorted({d["label"] for row in trainer.last_rows for labels in [row["seal_step_labels"]]
                               for d in labels})}
    (out / f"rank{state['rank']}.json").write_text(json.dumps(state))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
