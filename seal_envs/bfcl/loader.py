"""Read BFCL v4 multi-turn entries, their ground truth and tool docs from the installed package.

Everything comes from ``bfcl-eval`` (Apache-2.0) through ``importlib.resources``: the entries
``data/BFCL_v4_multi_turn_{category}.json``, the ground truth ``data/possible_answer/...`` and
the tool docs ``data/multi_turn_func_doc/*.json`` (all JSON lines). Only two modules of the
package are imported: the plain constants in ``bfcl_eval.constants.executable_backend_config``
and the backend classes it names. ``bfcl_eval.utils`` and ``bfcl_eval.constants.eval_config``
are never imported: importing them creates result folders inside site-packages.

Two splits of the 800 ids ship beside this file, both from the SEAL paper's released code
(github.com/yihaohu0118/SEAL, commit a0d22db, Apache-2.0), selectable by name:

- ``seal_400`` (``bfcl_400_split.json``, the default): the repository's ``data/bfcl_400_split.json``,
  400 train and 400 test ids, 100 per category, drawn with seed 0;
- ``seal_run`` (``bfcl_seal_parquet_split.json``): the ids the paper's run actually reads
  (``exp/SEAL.yaml``: ``data/bfcl_train.parquet`` for 400 train, ``data/bfcl_eval_400.parquet``
  for 300 test and the 100 ``val`` ids that pick the best checkpoint). Only 206 of its 400 train
  ids are in ``seal_400``'s train part.
"""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import json
from functools import lru_cache
from typing import Any

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
ENTRIES_PER_CATEGORY = 200


def available() -> bool:
    """True when ``bfcl-eval`` is installed (it is an optional dependency)."""
    return importlib.util.find_spec("bfcl_eval") is not None


def _data_file(*parts: str):
    return importlib.resources.files("bfcl_eval").joinpath("data", *parts)


def _json_lines(path) -> list[dict[str, Any]]:
    with path.open("r", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def category_of(entry_id: str) -> str:
    """``multi_turn_miss_func_12`` -> ``miss_func``."""
    prefix = entry_id.rsplit("_", 1)[0]
    category = prefix.removeprefix("multi_turn_")
    if prefix == category or category not in CATEGORIES:
        raise ValueError(f"not a BFCL v4 multi-turn entry id: {entry_id!r}; categories are {CATEGORIES}")
    return category


def _check_category(category: str) -> None:
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES}, got {category!r}")


@lru_cache(maxsize=None)
def entries(category: str) -> tuple[dict[str, Any], ...]:
    """The 200 entries of a category, in file order (treat them as read-only)."""
    _check_category(category)
    return tuple(_json_lines(_data_file(f"BFCL_v4_multi_turn_{category}.json")))


@lru_cache(maxsize=None)
def ground_truth(category: str) -> dict[str, list[list[str]]]:
    """Entry id -> the ground-truth calls of each user turn, in BFCL's Python call syntax."""
    _check_category(category)
    rows = _json_lines(_data_file("possible_answer", f"BFCL_v4_multi_turn_{category}.json"))
    return {r["id"]: r["ground_truth"] for r in rows}


@lru_cache(maxsize=None)
def entry_index() -> dict[str, dict[str, Any]]:
    """Every entry of the four categories by id."""
    return {e["id"]: e for c in CATEGORIES for e in entries(c)}


@lru_cache(maxsize=None)
def func_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    """BFCL's tool docs of one backend class (``name``, ``description``, ``parameters``...)."""
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    if class_name not in MULTI_TURN_FUNC_DOC_FILE_MAPPING:
        raise ValueError(f"unknown BFCL class {class_name!r}; known: {sorted(MULTI_TURN_FUNC_DOC_FILE_MAPPING)}")
    return tuple(_json_lines(_data_file("multi_turn_func_doc", MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name])))


@lru_cache(maxsize=None)
def backend_class(class_name: str) -> type:
    """The bfcl-eval class that holds the state of one API (``GorillaFileSystem``...)."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    module = importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name])
    return getattr(module, class_name)


@lru_cache(maxsize=None)  # asked at every instance a reset or a replay makes
def stateless(class_name: str) -> bool:
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    return class_name in STATELESS_CLASSES


SPLIT_FILES = {"seal_400": "bfcl_400_split.json", "seal_run": "bfcl_seal_parquet_split.json"}


@lru_cache(maxsize=None)
def paper_split(source: str = "seal_400") -> dict[str, tuple[str, ...]]:
    """A named split of the paper's code: ``{"train": ids, "test": ids}`` (``seal_400``, 400 each)
    or ``{"train": 400, "val": 100, "test": 300}`` (``seal_run``)."""
    if source not in SPLIT_FILES:
        raise ValueError(f"split_source must be one of {tuple(SPLIT_FILES)}, got {source!r}")
    path = importlib.resources.files("seal_envs.bfcl").joinpath(SPLIT_FILES[source])
    data = json.loads(path.read_text(encoding="utf-8"))
    return {part: tuple(ids) for part, ids in data.items() if isinstance(ids, list)}
