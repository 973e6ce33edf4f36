"""Fixtures of the seal_trl tests (helpers live in ``seal_helpers.py``)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="session")
def tok():
    pytest.importorskip("trl")
    from seal_trl.agent.tiny import build_tiny_tokenizer

    return build_tiny_tokenizer()
