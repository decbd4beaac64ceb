"""A sliding window of 1: transformers' DynamicSlidingWindowLayer stores every token (its slice
``states[:, :, -(W - 1):]`` is ``[-0:]``; differential record gpt_oss/03), while a token still
attends to one key, so what a decode step reads is one token's keys and values."""

from __future__ import annotations

from costcalc.api import load
from costcalc.engines.llamacpp import read_bytes
from costcalc.memory import kv_cache_elements, kv_cache_tokens, kv_width, stored_tokens

CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
}


def test_window_of_one_stores_every_token_and_reads_one() -> None:
    plain = load(CONFIG).spec
    windowed = load({**CONFIG, "model_type": "mistral", "sliding_window": 1}).spec
    assert windowed.sliding_window == 1
    assert stored_tokens(windowed, 50) == 50
    assert kv_cache_tokens(windowed, 50) == 1
    assert kv_cache_elements(windowed, 3, 50) == kv_cache_elements(plain, 3, 50)
    assert kv_cache_elements(windowed, 3, 50) == 2 * 3 * 50 * kv_width(windowed)
    one_token = read_bytes(plain, 3, 1, "f16", "f16")
    assert read_bytes(windowed, 3, 50, "f16", "f16") == one_token
    assert read_bytes(plain, 3, 50, "f16", "f16") == 50 * one_token
