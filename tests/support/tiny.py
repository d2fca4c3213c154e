"""A tiny random causal LM with a freshly trained tokenizer and a tool-aware chat template.

For tests and throughput benchmarks that must run offline in seconds: a 2-layer Llama with hidden
size 32 and random weights; a byte-level BPE tokenizer of about 300 tokens trained on the text it
is given; a ChatML-style template that renders ``tools`` and ``tool_calls`` (Hermes style
``<tool_call>{...}</tool_call>``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

SPECIAL_TOKENS = ["<|pad|>", "<|bos|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

CHAT_TEMPLATE = """{{- bos_token -}}
{%- set offset = 1 if messages and messages[0].role == 'system' else 0 -%}
{%- if tools or offset -%}
<|im_start|>system
{% if offset %}{{ messages[0].content }}
{% endif %}
{%- if tools -%}
# Tools
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
Answer a tool call as <tool_call>{"name": <name>, "arguments": <object>}</tool_call>
{%- endif %}<|im_end|>
{% endif -%}
{%- for message in messages[offset:] -%}
{%- if message.role == 'assistant' and message.tool_calls -%}
<|im_start|>assistant
{% for call in message.tool_calls -%}
<tool_call>{"name": {{ call.function.name | tojson }}, "arguments": {{ call.function.arguments | tojson }}}</tool_call>
{%- endfor %}<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}"""


def train_tokenizer(corpus: Iterable[str], vocab_size: int = 300):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|bos|>",
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        chat_template=CHAT_TEMPLATE,
    )


def build_tiny_model(
    path: str | os.PathLike[str],
    corpus: Iterable[str],
    *,
    vocab_size: int = 300,
    hidden_size: int = 32,
    layers: int = 2,
    seed: int = 0,
) -> Path:
    """Save a tiny random Llama and its tokenizer under ``path``; returns the path."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(corpus, vocab_size)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        initializer_range=0.5,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.do_sample = False
    path = Path(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
