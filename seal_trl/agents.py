"""A transformers model as a batched agent for :func:`seal_envs.eval.evaluate`.

All active episodes of a batch advance in lockstep: each round renders every conversation with the
tokenizer's chat template (``tools=info["tools"]``, generation prompt on), left-pads them into one
batch and makes one ``generate`` call; each episode gets the decoded text of its own completion.

    agent = HFBatchAgent("Qwen/Qwen3-0.6B", temperature=1.0)
    result = evaluate("seal/ToolUse-v0", agent, split="test", k=4)

``HFBatchAgent("tiny")`` uses the offline tiny model of :mod:`seal_trl.tiny` (random weights: a
smoke test of the plumbing, not of an agent).
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["HFBatchAgent"]


class HFBatchAgent:
    OPTIONS = ("temperature", "top_p", "max_new_tokens", "device", "dtype", "max_prompt_tokens")

    def __init__(self, model: str | Any = "tiny", tokenizer: Any = None, *, temperature: float = 1.0,
                 top_p: float = 1.0, max_new_tokens: int = 256, device: str | None = None,
                 dtype: str | None = None, max_prompt_tokens: int | None = None):
        import torch

        from seal_trl.tiny import load_model_and_tokenizer

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
        self.temperature = temperature
        self.top_p = top_p
        self.max_new_tokens = max_new_tokens
        limit = getattr(model.config, "max_position_embeddings", None)
        self.max_prompt_tokens = max_prompt_tokens or (limit - max_new_tokens if limit else None)
        self.generator_seed = 0
        self.generate_calls = 0

    def start(self, seeds: Sequence[int]) -> None:
        """Seed the sampling of this batch (the same seeds give the same completions)."""
        self.generator_seed = hash(tuple(seeds)) & 0x7FFF_FFFF

    def prompt(self, info: dict) -> str:
        return self.tokenizer.apply_chat_template(info["messages"], tools=info.get("tools") or None,
                                                  tokenize=False, add_generation_prompt=True)

    def act_batch(self, envs: Sequence[Any], infos: Sequence[dict], slots: Sequence[int]) -> list[str]:
        import torch

        texts = [self.prompt(info) for info in infos]
        enc = self.tokenizer(texts, add_special_tokens=False, padding=True, return_tensors="pt")
        if self.max_prompt_tokens and enc["input_ids"].shape[1] > self.max_prompt_tokens:
            enc = {k: v[:, -self.max_prompt_tokens:] for k, v in enc.items()}  # keep the recent context
        enc = {k: v.to(self.device) for k, v in enc.items()}
        sample = self.temperature > 0
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": sample,
                                  "pad_token_id": self.tokenizer.pad_token_id}
        if sample:
            kwargs.update(temperature=self.temperature, top_p=self.top_p)
        cuda = [self.device.index or 0] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(self.generator_seed + self.generate_calls)
            with torch.no_grad():
                out = self.model.generate(**enc, **kwargs)
        self.generate_calls += 1
        new = out[:, enc["input_ids"].shape[1]:]
        return [self.tokenizer.decode(row, skip_special_tokens=True) for row in new]


def make_agent(spec: str, **options: Any) -> Any:
    """Any agent spec of ``seal eval``: ``hf:<model id, path or "tiny">`` here (torch), the rest
    (oracle, random, openai:...) from :func:`seal_envs.eval.make_agent`."""
    if spec.startswith("hf:"):
        keep = {k: v for k, v in options.items() if k in HFBatchAgent.OPTIONS and v is not None}
        return HFBatchAgent(spec[3:], **keep)
    from seal_envs.eval import make_agent as make_env_agent

    return make_env_agent(spec, **options)
