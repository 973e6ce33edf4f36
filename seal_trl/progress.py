"""One progress bar (tqdm, on stderr, with rate and ETA) for every long command of ``seal``.

The library functions report progress through a plain ``progress(done, total)`` callback, so
they stay free of tqdm and of printing; the CLI turns that callback into a bar here. ``quiet``
gives a callback that does nothing. Without tqdm (a ``seal_envs``-only install) the bar is a
``\\r`` counter with the same rate and ETA.
"""

from __future__ import annotations

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
