"""Completions as the env reads them (seal_trl.play.chat.ActionDecoder)."""

import json

import pytest

pytest.importorskip("transformers")


def test_decoding_keeps_the_special_tokens_that_carry_a_call():
    """A Llama or Mistral call spelled with special tokens reaches the env as a call: decoding
    with skip_special_tokens=True would turn it into bare JSON or into no call at all (issue 18)."""
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_trl.play.chat import ActionDecoder
    from seal_trl.agent.tiny import build_tiny_tokenizer

    plain = build_tiny_tokenizer()
    assert not ActionDecoder(plain).keeps_markers  # markers are not special here: decoding is unchanged
    tok = build_tiny_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": ["[TOOL_CALLS]", "[ARGS]", "<|python_tag|>"]})
    decode = ActionDecoder(tok)
    env = gym.make("seal/ToolUse-Bank-v0")
    _, info = env.reset(seed=0)
    account = env.unwrapped.task.turns[0].plan[0].arguments
    name = env.unwrapped.task.turns[0].plan[0].name
    for text in (f'[TOOL_CALLS]{name}[ARGS]{json.dumps(account)}', f'<|python_tag|>{json.dumps({"name": name, "parameters": account})}'):
        ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        assert decode(ids) == text                                   # the marker stays, the end of turn goes
        assert tok.decode(ids, skip_special_tokens=True) != text     # what decoding used to hand the env
        env.reset(seed=0)
        *_, info = env.step(decode(ids))
        assert info["tool_calls"] and info["tool_calls"][0]["name"] == name


def test_a_tokenizer_with_a_response_template_parses_its_own_output():
    """transformers' parse_response where the tokenizer ships a response_template: the env gets the
    assistant message (content and tool_calls); output the template cannot parse goes as text."""
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_trl.play.chat import ActionDecoder
    from seal_trl.agent.tiny import build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    tok.response_template = {"version": 1, "start_anchor": "<|assistant|>", "fields": {
        "content": {"content": "text"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": True,
                       "transform": {"type": "function", "function": "{content}"}},
        "end": {"open": "<|end|>", "content": "text", "optional": True}}}
    decode = ActionDecoder(tok)
    env = gym.make("seal/ToolUse-Bank-v0")
    _, info = env.reset(seed=0)
    call = env.unwrapped.task.turns[0].plan[0]
    prefix = tok.apply_chat_template(info["new_messages"], add_generation_prompt=True, tokenize=True)["input_ids"]

    def ids(text):
        return tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]

    good = f'Checking.<tool_call>{json.dumps({"name": call.name, "arguments": dict(call.arguments)})}</tool_call>'
    message = decode(ids(good), prefix)
    assert message == {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"type": "function", "function": {"name": call.name, "arguments": dict(call.arguments)}}]}
    *_, info = env.step(message)
    assert info["tool_calls"][0]["name"] == call.name and info["events"][0]["kind"] == "ok"
    assert decode(ids('<tool_call>{"name": x</tool_call>'), prefix) == '<tool_call>{"name": x</tool_call>'
    assert decode(ids(good)) == good  # no prompt given: the text, as before
