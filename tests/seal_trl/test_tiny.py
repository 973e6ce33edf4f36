"""The offline tiny model/tokenizer pair: copyable ids, prefix-stable template, offline reload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seal_trl.agent.tiny import (  # noqa: E402
    EOS_TOKEN,
    build_tiny_model,
    build_tiny_tokenizer,
    load_model_and_tokenizer,
)

CALL = '<tool_call>{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}</tool_call>'
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_balance",
            "description": "Balance of an account.",
            "parameters": {
                "type": "object",
                "properties": {"account_id": {"type": "string"}},
                "required": ["account_id"],
            },
        },
    }
]
CONVERSATION = [
    {"role": "system", "content": "You are a banking assistant."},
    {"role": "user", "content": "What is the balance of ACC-1001?"},
    {"role": "assistant", "content": CALL},
    {"role": "tool", "content": '{"balance": 12.5}'},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "get_balance", "arguments": {"account_id": "ACC-7"}}}],
    },
    {"role": "tool", "content": '{"error": "unknown account"}'},
    {"role": "assistant", "content": "Your balance is 12.5."},
    {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]},
]


@pytest.fixture(scope="module")
def tok():
    return build_tiny_tokenizer()


def test_digits_are_single_tokens_and_ids_roundtrip(tok):
    pieces = tok.convert_ids_to_tokens(tok("ACC-98765", add_special_tokens=False)["input_ids"])
    assert pieces[-5:] == ["9", "8", "7", "6", "5"]
    ids = tok(CALL, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == CALL  # <tool_call> survives TRL-style decoding
    assert tok.convert_ids_to_tokens(ids)[0] == "<tool_call>"
    text = "héllo wörld 😀 naïve"  # byte-level: no unknown tokens, exact round trip
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text


def test_special_tokens(tok):
    assert tok.eos_token == EOS_TOKEN
    assert tok.pad_token_id is not None and tok.bos_token_id is not None
    assert len({tok.pad_token_id, tok.bos_token_id, tok.eos_token_id}) == 3
    assert tok.padding_side == "left"


def test_tokenizer_training_is_deterministic(tok):
    assert build_tiny_tokenizer().get_vocab() == tok.get_vocab()


def test_chat_template_renders_tools_and_roles(tok):
    text = tok.apply_chat_template(CONVERSATION, tools=TOOLS, tokenize=False)
    assert text.startswith("<s><|system|>You are a banking assistant.\n\n# Tools\n"
                           "get_balance: Balance of an account.\n  account_id* (string) \n<|end|>")
    assert f"<|assistant|>{CALL}<|end|><|tool|>" in text
    assert '<tool_call>{"name": "get_balance", "arguments": {"account_id": "ACC-7"}}</tool_call>' in text
    assert text.endswith("<|user|>Thanks!<|end|>")
    no_tools = tok.apply_chat_template(CONVERSATION[1:2], tokenize=False)
    assert no_tools == "<s><|user|>What is the balance of ACC-1001?<|end|>"


def test_chat_template_is_token_prefix_stable(tok):
    assistant_header = tok.convert_tokens_to_ids("<|assistant|>")
    previous = None
    for k in range(1, len(CONVERSATION) + 1):
        ids = tok.apply_chat_template(CONVERSATION[:k], tools=TOOLS, tokenize=True, return_dict=False)
        with_prompt = tok.apply_chat_template(
            CONVERSATION[:k], tools=TOOLS, tokenize=True, return_dict=False, add_generation_prompt=True
        )
        assert with_prompt == ids + [assistant_header]
        if previous is not None:
            assert ids[: len(previous)] == previous
        previous = ids


def test_assistant_generation_equals_rendered_message(tok):
    """Generated text + EOS is exactly the token span the template renders for that message."""
    prompt = tok.apply_chat_template(CONVERSATION[:2], tokenize=True, return_dict=False, add_generation_prompt=True)
    generated = tok(CALL, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    full = tok.apply_chat_template(CONVERSATION[:3], tokenize=True, return_dict=False)
    assert full == prompt + generated


def test_model_is_llama_deterministic_and_runs(tok):
    model = build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2)
    assert model.config.model_type == "llama"
    assert model.config.vocab_size == len(tok)
    before = torch.random.get_rng_state()
    again = build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2)
    assert torch.equal(torch.random.get_rng_state(), before)  # the caller's RNG is untouched
    for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    other = build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2, seed=1)
    assert not torch.equal(model.lm_head.weight, other.lm_head.weight)
    ids = torch.tensor([tok(CALL, add_special_tokens=False)["input_ids"]])
    assert model(ids).logits.shape == (1, ids.size(1), len(tok))


def test_save_and_reload_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model, tok = load_model_and_tokenizer("tiny", hidden_size=32, num_layers=1, num_heads=2)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    model2, tok2 = load_model_and_tokenizer(str(tmp_path))
    assert tok2(CALL)["input_ids"] == tok(CALL)["input_ids"]
    assert tok2.apply_chat_template(CONVERSATION, tools=TOOLS, tokenize=False) == tok.apply_chat_template(
        CONVERSATION, tools=TOOLS, tokenize=False
    )
    assert (tok2.eos_token, tok2.pad_token, tok2.padding_side) == (tok.eos_token, tok.pad_token, "left")
    assert type(model2).__name__ == "LlamaForCausalLM"
    ids = torch.tensor([tok(CALL)["input_ids"]])
    torch.testing.assert_close(model(ids).logits, model2(ids).logits)


def test_package_import_is_lazy():
    code = (
        "import sys, seal_trl; "
        "heavy = [m for m in ('torch', 'transformers', 'trl') if m in sys.modules]; "
        "assert not heavy, heavy; "
        "assert callable(seal_trl.trajectory_scale); "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
