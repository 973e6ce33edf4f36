"""``seal train``: a SEAL co-evolution run, written to a run folder ``seal report`` reads.

The default is small on purpose: the offline tiny model on CPU, a few GRPO steps over the
training mixture, with turn reweighting and env evolution on. Any Hugging Face model id or path
works through ``--model``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="runs/seal-tiny", help="run folder")
    p.add_argument("--model", default="tiny", help="'tiny' (offline, built in-process) or a HF model id/path")
    p.add_argument("--env", default="seal/ToolUse-v0", help="environment id")
    p.add_argument("--weighting", default="turn", choices=["none", "trajectory", "turn"])
    p.add_argument("--surface", default="canonical", choices=["canonical", "observation_lite"],
                   help="training surface preset (observation_lite: the paper's static hints); evaluation stays canonical")
    p.add_argument("--no-evolution", action="store_true", help="keep the surface canonical")
    p.add_argument("--curriculum", action="store_true", help="sample tasks by the evolver's curriculum")
    p.add_argument("--steps", type=int, default=12, help="GRPO steps")
    p.add_argument("--batch-size", type=int, default=8, help="episodes per step")
    p.add_argument("--num-generations", type=int, default=4, help="episodes per task (GRPO group)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--max-new-tokens", type=int, default=32, help="new tokens per assistant turn")
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gpu", action="store_true", help="train on the GPU with bf16")


def run(args: argparse.Namespace) -> Path:
    from seal_trl.config import SEALConfig
    from seal_trl.data import make_dataset
    from seal_trl.tiny import load_model_and_tokenizer
    from seal_trl.trainer import SEALGRPOTrainer

    out = Path(args.out)
    model, tokenizer = load_model_and_tokenizer(args.model)
    config = SEALConfig(
        output_dir=str(out), use_cpu=not args.gpu, bf16=args.gpu, activation_checkpointing=False,
        report_to="none", save_strategy="no", logging_steps=1, learning_rate=args.lr, max_steps=args.steps,
        seed=args.seed, per_device_train_batch_size=args.batch_size, num_generations=args.num_generations,
        max_completion_length=args.max_turns * (args.max_new_tokens + 96), temperature=1.0,
        env_id=args.env, max_turns=args.max_turns, max_new_tokens_per_turn=args.max_new_tokens,
        weighting=args.weighting, evolution=not args.no_evolution, curriculum=args.curriculum,
        surface_preset=args.surface,
        evolver_min_episodes=4,
    )
    callback = run_folder_callback(out)
    trainer = SEALGRPOTrainer(model=model, args=config, processing_class=tokenizer,
                              train_dataset=make_dataset(args.env, "train"), callbacks=[callback])
    callback.coevolution = trainer.seal_coevolution
    trainer.train()
    trainer.save_model(str(out / "model"))
    trainer.save_state()
    (out / "seal_state.json").write_text(json.dumps(trainer.seal_state_dict(), indent=1, default=str))
    callback.writer.save_evolver(trainer.seal_coevolution.evolver)
    callback.writer.save_surface(trainer.seal_coevolution.surface)
    from seal_envs.report import write_report

    write_report(out)
    return out


def run_folder_callback(out: Path):
    """A ``TrainerCallback`` that writes the run folder ``seal report`` reads while training runs:
    a ``metrics.jsonl`` line per logged step, and each surface patch with the step it came at.
    Built on demand so importing this module (the CLI does) stays free of transformers."""
    from transformers import TrainerCallback

    from seal_envs.report import RunWriter, metrics_from_log_history

    class RunFolderCallback(TrainerCallback):
        def __init__(self) -> None:
            self.writer = RunWriter(out)
            self.coevolution = None
            self.seen_events = 0

        def on_log(self, args, state, control, logs=None, **kwargs):
            for record in metrics_from_log_history([{**(logs or {}), "step": state.global_step}]):
                self.writer.log(record.pop("step"), record)

        def on_step_end(self, args, state, control, **kwargs):
            events = self.coevolution.evolver.events if self.coevolution is not None else []
            fresh, self.seen_events = events[self.seen_events:], len(events)
            for event in fresh:
                patch = {k: v for k, v in event.items() if k != "update"}
                self.writer.log_patches(state.global_step, [patch], update=event["update"])

    return RunFolderCallback()
