import random

import pytest

from seal_envs.core.generator import GeneratorError, TaskBuilder
from seal_envs.core.types import ToolCall
from seal_envs.domains.bank import BankBackend, GENERATOR


def builder():
    state = GENERATOR.initial_state(random.Random(0))
    return TaskBuilder(BankBackend, state, random.Random(1), "train"), state


def test_reference_calls_must_execute():
    b, _ = builder()
    with pytest.raises(GeneratorError, match="failed"):
        b.turn("Balance?", [ToolCall("get_balance", {"account_id": "ACC-9999"})])


def test_reference_writes_must_change_the_state():
    """Otherwise a do-nothing agent passes the turn's state check."""
    b, state = builder()
    cid, cust = next(iter(sorted(state["customers"].items())))
    card = next(c for c, v in sorted(state["cards"].items()) if v["owner"] == cid)
    verify = ToolCall("verify_identity", {"customer_id": cid, "pin": cust["pin"]})
    b.turn("Freeze it.", [verify, ToolCall("freeze_card", {"card_id": card})])
    with pytest.raises(GeneratorError, match="changes nothing"):
        b.turn("Freeze it again.", [ToolCall("freeze_card", {"card_id": card})])


def test_withheld_value_must_be_an_argument_of_the_plan():
    b, state = builder()
    acc = sorted(state["accounts"])[0]
    with pytest.raises(GeneratorError, match="not an argument"):
        b.ask_later("Balance?", [ToolCall("get_balance", {"account_id": acc})], "pin", "1234", "PIN")


def test_late_tool_must_be_revealed():
    b, _ = builder()
    b.hidden.add("freeze_card")
    b.turn("Hello.")
    with pytest.raises(GeneratorError, match="never revealed"):
        b.build(domain="bank", seed=0, difficulty=1, template="x")
