"""A transformers model as a batched agent for :func:`seal_envs.eval.evaluate`.

All active episodes of a batch advance in lockstep, one batched generation per round. Each episode's
conversation is kept as token ids by :class:`seal_trl.play.chat.Transcript`, exactly as the training
rollout keeps it (same renderer, same end-of-turn handling), so a policy is evaluated on the token
ids it was trained on; :class:`seal_trl.play.engine.KVCacheEngine` keeps each episode's KV cache between
rounds, so a round encodes only the env's reply. Models or settings the engine cannot serve fall
back to ``model.generate`` on the left-padded sequences.

    agent = HFBatchAgent("Qwen/Qwen3-0.6B", temperature=1.0)
    result = evaluate("seal/ToolUse-v0", agent, split="test", k=4)

``HFBatchAgent("tiny")`` uses the offline tiny model of :mod:`seal_trl.agent.tiny` (random weights: a
smoke test of the plumbing, not of an agent). A ``.gguf`` file loads through transformers' GGUF
reader (the ``gguf`` package: ``pip install -e ".[gguf]"``), dequantized to float32.

A chat template without a tool block (SmolLM2's, most base models') drops ``tools`` as a server
can (issue 32). ``tools_in_prompt="auto"`` (the default) renders one short conversation with and
without a tool at start; if the template ignores it, the tools go in the system message as text
and the calls the model writes are read from its text, as for
:class:`seal_envs.openai_agent.OpenAIChatAgent`.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["HFBatchAgent"]


class HFBatchAgent:
    OPTIONS = ("temperature", "top_p", "max_new_tokens", "device", "dtype", "max_prompt_tokens", "tools_in_prompt")

    def __init__(self, model: str | Any = "tiny", tokenizer: Any = None, *, temperature: float = 1.0,
                 top_p: float = 1.0, max_new_tokens: int = 256, device: str | None = None,
                 dtype: str | None = None, max_prompt_tokens: int | None = None,
                 chat_template_kwargs: dict | None = None, tools_in_prompt: str = "auto"):
        import torch
        from transformers import GenerationConfig

        from seal_trl.play.chat import ActionDecoder, choose_tools_in_prompt, make_renderer
        from seal_trl.play.generate_fn import eos_ids
        from seal_trl.play.rollout import hf_generate_fn
        from seal_trl.agent.tiny import load_model_and_tokenizer

        if isinstance(model, str):
            self.name = f"hf:{model}"
            kwargs = {} if model == "tiny" or dtype is None else {"dtype": getattr(torch, dtype)}
            model, loaded_tokenizer = load_model_and_tokenizer(model, **kwargs)
            tokenizer = tokenizer or loaded_tokenizer
        else:
            self.name = f"hf:{type(model).__name__}"
            if tokenizer is None:
                raise ValueError("pass the tokenizer along with a model object")
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.decode = ActionDecoder(tokenizer)
        self.temperature = temperature
        self.top_p = top_p
        self.max_new_tokens = max_new_tokens
        limit = getattr(model.config, "max_position_embeddings", None)
        self.max_prompt_tokens = max_prompt_tokens or (limit - max_new_tokens if limit else None)
        sample = temperature > 0
        # sampling: the model's own top-k (what model.generate applied before) with this temperature and top-p
        knobs = {"temperature": temperature, "top_p": top_p, "top_k": model.generation_config.top_k} if sample else {}
        config = GenerationConfig(do_sample=sample, pad_token_id=tokenizer.pad_token_id,
                                  eos_token_id=model.generation_config.eos_token_id, **knobs)
        self.eos_ids = eos_ids(tokenizer, config)
        self.renderer = make_renderer(tokenizer, self.eos_ids, chat_template_kwargs)
        self.mode = tools_in_prompt
        self.tools_probe, self.prompt_tools = choose_tools_in_prompt(self.renderer, tools_in_prompt)
        self.generate = hf_generate_fn(self.model, tokenizer, config, seed=0)
        self.keyed = hasattr(self.generate, "generate_episodes")
        self.transcripts: dict[int, Any] = {}  # slot -> the episode's Transcript
        self.sequences: dict[int, list[int]] = {}  # slot -> the ids the model has seen and generated
        self.generator_seed = 0
        self.generate_calls = 0

    def start(self, seeds: Sequence[int]) -> None:
        """Start a batch: forget the last one and seed its sampling (the same seeds give the same completions)."""
        self.generator_seed = hash(tuple(seeds)) & 0x7FFF_FFFF
        self.generate_calls = 0
        if self.keyed:
            self.generate.release(list(self.transcripts))
            self.generate.reseed(self.generator_seed)
        self.transcripts, self.sequences = {}, {}

    def tools_line(self, call_format: Any = None) -> str:
        """One line: whether the chat template renders tools and where they go."""
        from seal_envs.openai_agent import tools_line

        return tools_line(self.tools_probe, self.mode, self.prompt_tools, call_format, "the chat template's `tools`")

    def eval_record(self) -> dict[str, Any]:
        """What ``eval.json`` keeps of this agent's run (``agent_info``)."""
        return {"tools_in_prompt": self.mode, "tools_sent_in": "system_message" if self.prompt_tools else "chat_template",
                "tools_probe": self.tools_probe.to_dict()}

    def observe(self, slot: int, info: dict, env: Any = None) -> list[int]:
        """The episode's ids including the env's latest reply (its reset info starts a transcript)."""
        from seal_trl.play.chat import Transcript, text_tools_info

        if self.prompt_tools:  # the conversation as text, the tools in its system message in the env's format
            info = text_tools_info(env, info, len(self.transcripts[slot].history) if slot in self.transcripts else 0)
        if slot not in self.transcripts:
            self.transcripts[slot] = Transcript(self.renderer, info, self.eos_ids, render_tools=not self.prompt_tools)
            self.sequences[slot] = list(self.transcripts[slot].prompt_ids)
        else:
            self.sequences[slot] += self.transcripts[slot].reply_ids(info)
        return self.sequences[slot]

    def act_batch(self, envs: Sequence[Any], infos: Sequence[dict], slots: Sequence[int]) -> list[str]:
        import torch

        gone = [s for s in self.transcripts if s not in set(slots)]  # ended episodes never come back
        if gone and self.keyed:
            self.generate.release(gone)
        for slot in gone:
            del self.transcripts[slot], self.sequences[slot]
        seqs = [self.observe(slot, info, env) for slot, info, env in zip(slots, infos, envs)]
        if self.max_prompt_tokens:
            seqs = [s[-self.max_prompt_tokens:] for s in seqs]  # keep the recent context
        if self.keyed:
            out = self.generate.generate_episodes(list(slots), seqs, self.max_new_tokens)
        else:  # model.generate samples from the global RNG: seed it per call, leave the caller's state alone
            cuda = [self.device.index or 0] if self.device.type == "cuda" else []
            with torch.random.fork_rng(devices=cuda):
                torch.manual_seed(self.generator_seed + self.generate_calls)
                out = self.generate(seqs, self.max_new_tokens)
        self.generate_calls += 1
        texts = []
        for slot, seq, ids in zip(slots, seqs, out.ids):
            self.sequences[slot] += list(ids) + self.transcripts[slot].closing_ids(ids)
            texts.append(self.decode(ids, seq))
        return texts


def make_agent(spec: str, **options: Any) -> Any:
    """Any agent spec of ``seal eval``: ``hf:<model id, path or "tiny">`` here (torch), the rest
    (oracle, random, openai:...) from :func:`seal_envs.eval.make_agent`."""
    if spec.startswith("hf:"):
        keep = {k: v for k, v in options.items() if k in HFBatchAgent.OPTIONS and v is not None}
        return HFBatchAgent(spec[3:], **keep)
    from seal_envs.eval import make_agent as make_env_agent

    return make_env_agent(spec, **options)
