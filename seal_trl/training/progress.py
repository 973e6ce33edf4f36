"""One progress bar (tqdm, on stderr, with rate and ETA) for every long command of ``seal``.

The library functions report progress through a plain ``progress(done, total)`` callback, so
they stay free of tqdm and of printing; the CLI turns that callback into a bar here. ``quiet``
gives a callback that does nothing. Without tqdm (a ``seal_envs``-only install) the bar is a
``\\r`` counter with the same rate and ETA. :func:`silence_library_bars` turns off the bars the
Hugging Face libraries draw on their own, for ``--quiet``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable

Progress = Callable[[int, int], None]


def progress_bar(desc: str, unit: str, quiet: bool = False) -> Progress:
    """A ``progress(done, total)`` callback drawing one bar; it closes itself at ``done >= total``."""
    if quiet:
        return lambda done, total: None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with the train extra
        return _counter(desc, unit)
    state: dict = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None and state.get("closed"):  # a closing call after the bar already finished
            return
        if bar is None:
            bar = state["bar"] = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True)
        if bar.total != total:  # an estimate of the total may change on the way (warm start's clock)
            bar.total = total
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            state.pop("bar")
            state["closed"] = True

    return update


def _counter(desc: str, unit: str) -> Progress:
    start = time.perf_counter()

    def update(done: int, total: int) -> None:
        elapsed = time.perf_counter() - start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"{(total - done) / rate:.0f} s left" if rate > 0 else "?"
        print(f"\r{desc}: {done}/{total} {unit}s, {rate:.2f} {unit}/s, {eta}", end="" if done < total else "\n",
              file=sys.stderr, flush=True)

    return update


def silence_library_bars() -> None:
    """Turn off the tqdm bars of transformers, huggingface_hub and datasets.

    Why: ``--quiet`` promises no progress bars, and ours are not the only ones; transformers
    draws "Writing model shards" when a run saves its model, "Loading checkpoint shards" when a
    large one loads, the Hub one per download and datasets one per ``map``. The environment
    variables cover the libraries not imported yet (nothing is imported here, so a base install
    without them pays nothing); the ones already imported are told directly.
    """
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils.logging import disable_progress_bar

        disable_progress_bar()
    if "datasets" in sys.modules:
        from datasets.utils import disable_progress_bars as disable_datasets_bars

        disable_datasets_bars()
