"""Run a recipe file: one JSON file that states a whole training run (model, splits, every setting).

Why a file and not a script: the paper's run is a fixed list of settings; keeping them in one
declarative file lets ``docs/reproducing.md`` map each one, lets a test run the very same file
(its ``smoke`` section swaps in the tiny model and a one-step budget), and lets anyone change a
setting with ``--set key=value`` without editing code.

    accelerate launch --config_file recipes/accelerate_fsdp_4gpu.yaml -m seal_trl.training.recipe recipes/seal_paper.json
    python -m seal_trl.training.recipe recipes/seal_paper.json --smoke          # CPU, tiny model, one step

A recipe holds ``model``, ``train_split``, ``eval_split`` (or null), ``train_rows`` / ``eval_rows``
(null: the whole split) and ``config`` (``SEALConfig`` fields, JSON values). ``--set`` keys
``model``, ``train_rows``, ``eval_rows``, ``train_split``, ``eval_split`` change those; any other
key is a ``config`` field. Values are read as JSON when they parse (``--set max_steps=3``), else
as text.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["Recipe", "main", "parse_overrides", "run"]

_TOP_LEVEL = ("model", "train_rows", "eval_rows", "train_split", "eval_split")


@dataclass(frozen=True)
class Recipe:
    """A training run as data (see the module doc for the file's keys)."""

    model: str
    config: Mapping[str, Any]
    train_split: str = "train"
    eval_split: str | None = None
    train_rows: int | None = None
    eval_rows: int | None = None
    name: str = ""
    smoke: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def load(path: str | Path) -> "Recipe":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        known = {"model", "config", "train_split", "eval_split", "train_rows", "eval_rows", "name", "smoke"}
        return Recipe(**{k: v for k, v in data.items() if k in known})

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Recipe":
        """Top-level keys replace fields; ``config`` (a dict) and any other key update the config."""
        top = {k: v for k, v in overrides.items() if k in _TOP_LEVEL}
        config = dict(self.config)
        config.update(overrides.get("config", {}))
        config.update({k: v for k, v in overrides.items() if k not in _TOP_LEVEL and k != "config"})
        return replace(self, config=config, **top)

    def smoke_recipe(self) -> "Recipe":
        """The same run with the file's ``smoke`` section applied (tiny model, one step)."""
        if not self.smoke:
            raise ValueError(f"recipe {self.name or '(unnamed)'} has no 'smoke' section")
        return self.with_overrides(self.smoke)

    def seal_config(self) -> Any:
        from seal_trl.training.config import SEALConfig

        return SEALConfig(**dict(self.config))


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``["max_steps=3", "model=tiny"]`` -> ``{"max_steps": 3, "model": "tiny"}`` (JSON values when they parse)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set takes key=value, got {pair!r}")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
    return out


def run(recipe: Recipe) -> Any:
    """Train as the recipe says; return the trainer (its output folder holds the checkpoints,
    ``recipe.json``, the final model and ``seal_state.json``)."""
    from seal_trl.play.data import make_dataset
    from seal_trl.agent.tiny import load_model_and_tokenizer
    from seal_trl.training.trainer import SEALGRPOTrainer

    config = recipe.seal_config()
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load_model_and_tokenizer(_loadable(recipe.model, out, config.beta))
    train = make_dataset(config.env_id, recipe.train_split, num_rows=recipe.train_rows, env_kwargs=config.env_kwargs)
    evaluation = None
    if recipe.eval_split is not None and config.eval_strategy != "no":
        evaluation = make_dataset(config.env_id, recipe.eval_split, num_rows=recipe.eval_rows,
                                  env_kwargs=config.env_kwargs)
    trainer = SEALGRPOTrainer(model=model, args=config, processing_class=tokenizer, train_dataset=train,
                              eval_dataset=evaluation)
    if trainer.is_world_process_zero():
        (out / "recipe.json").write_text(json.dumps({"recipe": recipe.name, "model": recipe.model,
                                                     "config": json.loads(config.to_json_string())}, indent=1))
    trainer.train()
    trainer.save_model(str(out / "model"))
    if trainer.is_world_process_zero():
        trainer.save_seal_state(out)
    return trainer


def _loadable(model: str, out: Path, beta: float) -> str:
    """The model to load. TRL builds the KL reference model (``beta > 0``) from the policy's name
    or path, which the in-process tiny model lacks: it is written to ``out/tiny-init`` first."""
    if model != "tiny" or beta == 0.0:
        return model
    from seal_trl.agent.tiny import load_model_and_tokenizer

    path = out / "tiny-init"
    tiny, tokenizer = load_model_and_tokenizer("tiny")
    tiny.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def main(argv: Sequence[str] | None = None) -> Any:
    p = argparse.ArgumentParser(prog="python -m seal_trl.training.recipe", description="Train from a recipe file")
    p.add_argument("recipe", help="a recipe JSON file, e.g. recipes/seal_paper.json")
    p.add_argument("--smoke", action="store_true", help="apply the file's smoke section (tiny model, one step, CPU)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="change one setting (repeatable)")
    args = p.parse_args(argv)
    recipe = Recipe.load(args.recipe)
    if args.smoke:
        recipe = recipe.smoke_recipe()
    return run(recipe.with_overrides(parse_overrides(args.overrides)))


if __name__ == "__main__":
    main()
