"""Memory formulas against PyTorch/transformers golden data, published figures and their laws."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costcalc.activations import korthikanti_score_bytes, korthikanti_terms, measured
from costcalc.cli.memory import bar
from costcalc.errors import RangeError, UsageError
from costcalc.loaders import LoadedModel, load_preset
from costcalc.macs import ATTENTION_KERNELS, RECOMPUTE_MODES, forward_macs
from costcalc.memory import (
    OPTIMIZERS,
    activation_bytes,
    attention_score_bytes,
    gradient_bytes,
    kv_cache_bytes,
    kv_cache_elements,
    layers_activation_bytes,
    master_weight_bytes,
    memory_report,
    memory_setup,
    optimizer_moment_elements,
    optimizer_state_bytes,
    optimizer_state_elements,
    weight_bytes,
)
from costcalc.memory_results import memory_result
from costcalc.params import total_params
from costcalc.spec import ModelSpec
from costcalc.tensors import tensor_count
from tests.golden_models import KV_MODELS, golden, golden_spec, memory_reference
from tests.spec_strategies import specs

GPT2 = load_preset("gpt2-small").spec
QWEN = load_preset("qwen2.5-0.5b").spec
OPTIMIZER_MODELS = ("gpt2", "qwen2.5-0.5b")

# --------------------------------------------------------------------------- KV cache


def test_gpt2_small_keeps_294912_kv_elements_for_16_tokens() -> None:
    # issue 6; tests/golden/hf_reference.json: gpt2 kv_cache_elements (use_cache=True, B=1, T=16)
    assert golden("gpt2")["kv_cache_elements"] == 294_912
    assert kv_cache_elements(GPT2, batch=1, length=16) == 294_912


@pytest.mark.parametrize("name", KV_MODELS)
def test_kv_cache_elements_equal_transformers(name: str) -> None:
    # tests/golden/hf_reference.json: kv_cache (elements of every layer's keys and values)
    record = golden(name)["kv_cache"]
    spec = golden_spec(name)
    assert (
        kv_cache_elements(spec, record["batch"], record["seq_len"]) == (record["kv_cache_elements"])
    )


def test_qwen_kv_cache_counts_its_two_kv_heads() -> None:
    # tests/golden/hf_reference.json: qwen2.5-0.5b keys of layer 0 are [1, 2, 16, 64]
    assert golden("qwen2.5-0.5b")["kv_cache"]["key_shape_layer0"] == [1, 2, 16, 64]
    assert kv_cache_elements(QWEN, 1, 16) == 98_304
    assert kv_cache_elements(QWEN.model_copy(update={"n_kv_heads": 14}), 1, 16) == 7 * 98_304


def test_sliding_window_caps_the_cache_one_token_above_transformers() -> None:
    # tests/golden/memory_reference.json: Qwen2.5-0.5B with every layer sliding (window 8),
    # 16 tokens. transformers' DynamicSlidingWindowLayer keeps window - 1 = 7 tokens between
    # forwards and appends the new one; costcalc counts the window a decoding step attends to.
    record = memory_reference()["sliding_window_kv_cache"]
    window = record["overrides"]["sliding_window"]
    spec = QWEN.model_copy(update={"sliding_window": window})
    assert record["key_shape_layer0"][2] == window - 1
    one_token = 2 * spec.n_layers * spec.kv_heads * spec.head_width
    assert kv_cache_elements(spec, record["batch"], record["seq_len"]) == (
        record["kv_cache_elements"] + one_token
    )


def test_kv_cache_heads_replace_the_kv_heads_in_the_cache_only() -> None:
    # Falcon's new decoder architecture projects K key/value heads but caches all H.
    wide = QWEN.model_copy(update={"kv_cache_heads": 14})
    assert kv_cache_elements(wide, 1, 16) == 7 * kv_cache_elements(QWEN, 1, 16)
    assert total_params(wide) == total_params(QWEN)


def test_kv_cache_all_tokens_ignores_the_window_for_the_cache_only() -> None:
    # GPT-Neo's local layers in transformers: masked to the window, cached in full.
    windowed = QWEN.model_copy(update={"sliding_window": 8})
    kept = windowed.model_copy(update={"kv_cache_all_tokens": True})
    assert kv_cache_elements(kept, 1, 100) == kv_cache_elements(QWEN, 1, 100)
    assert kv_cache_elements(windowed, 1, 100) == kv_cache_elements(QWEN, 1, 8)
    assert forward_macs(kept, 1, 100) == forward_macs(windowed, 1, 100)


def test_cache_keys_apply_to_attention_blocks_only() -> None:
    for key, value in (("kv_cache_heads", 2), ("kv_cache_all_tokens", True)):
        with pytest.raises(ValueError, match=key):
            ModelSpec(
                vocab_size=10, d_model=8, n_layers=1, context_length=8, mixer="none", **{key: value}
            )


def test_kv_cache_bytes_follow_the_kv_dtype() -> None:
    # 294,912 elements (golden, above): 2 bytes each in bf16, half a byte in int4
    assert kv_cache_bytes(GPT2, 1, 16, "bf16") == 589_824
    assert kv_cache_bytes(GPT2, 1, 16, "int4") == 147_456
    assert kv_cache_bytes(GPT2, 1, 16, "fp32") == 1_179_648


@given(specs(), st.integers(1, 8), st.integers(1, 8192))
def test_kv_cache_is_linear_in_batch_and_layers(spec: ModelSpec, batch: int, length: int) -> None:
    one = kv_cache_elements(spec, 1, length)
    assert kv_cache_elements(spec, batch, length) == batch * one
    deeper = spec.model_copy(update={"n_layers": 2 * spec.n_layers})
    assert kv_cache_elements(deeper, batch, length) == 2 * batch * one


@given(specs(), st.integers(1, 8192))
def test_kv_cache_stops_growing_at_the_window(spec: ModelSpec, length: int) -> None:
    window = spec.sliding_window
    grows = window in (None, 1) or length < window  # a window of 1 stores every token
    extra = kv_cache_elements(spec, 1, length + 1) - kv_cache_elements(spec, 1, length)
    assert extra == (2 * spec.n_layers * spec.kv_heads * spec.head_width if grows else 0)


@given(specs())
def test_gqa_with_kv_heads_equal_to_heads_is_mha(spec: ModelSpec) -> None:
    mha = spec.model_copy(update={"n_kv_heads": None})
    gqa = spec.model_copy(update={"n_kv_heads": spec.n_heads})
    assert kv_cache_elements(gqa, 2, 100) == kv_cache_elements(mha, 2, 100)


# --------------------------------------------------------------------------- optimizer state


@pytest.mark.parametrize("name", OPTIMIZER_MODELS)
def test_adamw_state_after_a_real_step(name: str) -> None:
    # tests/golden/hf_reference.json: adamw_state (real CPU step after a backward pass)
    record = golden(name)["adamw_state"]
    spec = golden_spec(name)
    assert optimizer_moment_elements(spec, "adamw") == record["moments_numel"]
    assert optimizer_state_elements(spec, "adamw") == record["moments_numel"] + record["step_numel"]
    assert tensor_count(spec) == record["n_step_tensors"]


@pytest.mark.parametrize("name", OPTIMIZER_MODELS)
@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_optimizer_state_elements_equal_torch(name: str, optimizer: str) -> None:
    # tests/golden/memory_reference.json: every tensor in optimizer.state after one step
    record = memory_reference()["models"][name]["optimizers"][optimizer]
    spec = golden_spec(name)
    assert optimizer_state_elements(spec, optimizer) == record["state_numel"]
    moments = record["state_numel"] - record["state_numel_by_key"].get("step", 0)
    assert optimizer_moment_elements(spec, optimizer) == moments


@pytest.mark.parametrize("name", OPTIMIZER_MODELS)
def test_adamw_keeps_two_moments_per_parameter_and_a_step_per_tensor(name: str) -> None:
    # tests/golden/memory_reference.json: exp_avg and exp_avg_sq per parameter, one fp32 step
    record = memory_reference()["models"][name]["optimizers"]["adamw"]
    by_key = record["state_numel_by_key"]
    assert by_key["exp_avg"] == by_key["exp_avg_sq"] == record["param_numel"]
    assert by_key["step"] == record["n_param_tensors"]
    assert record["state_dtype_by_key"]["step"] == "torch.float32"
    spec = golden_spec(name)
    steps = tensor_count(spec)
    # fp32 moments and steps: 4 bytes each
    assert optimizer_state_bytes(spec, "adamw", "fp32") == 4 * (2 * record["param_numel"] + steps)
    # bf16 moments (pure bf16 training: torch's zeros_like(p)), steps stay fp32
    assert optimizer_state_bytes(spec, "adamw", "bf16") == 2 * 2 * record["param_numel"] + 4 * steps


@given(specs())
def test_adafactor_keeps_less_than_adamw(spec: ModelSpec) -> None:
    assert optimizer_state_elements(spec, "adafactor") <= optimizer_state_elements(spec, "adamw")


def test_mixed_precision_adam_costs_16_bytes_per_parameter() -> None:
    # Rajbhandari et al. 2020, ZeRO, Sec. 3.1: mixed-precision Adam keeps 2 + 2 + (4 + 4 + 4)
    # = 16 bytes per parameter (fp16 weights and gradients, fp32 masters, momentum, variance);
    # torch adds a 4-byte step per tensor.
    report = memory_report(QWEN, memory_setup(dtype="bf16", train=True, length=1024))
    P, N = 494_032_768, 290  # golden parameters_total and n_param_tensors of Qwen2.5-0.5B
    state = (
        report.bytes_weights
        + report.bytes_gradients
        + report.bytes_master_weights
        + report.bytes_optimizer
    )
    assert state == 16 * P + 4 * N


# --------------------------------------------------------------------------- weights and gradients


@pytest.mark.parametrize(
    ("dtype", "per_parameter"), [("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1), ("int8", 1)]
)
def test_weight_bytes(dtype: str, per_parameter: int) -> None:
    # golden parameters_total of GPT-2 small: 124,439,808
    P = golden("gpt2")["parameters_total"]
    assert weight_bytes(GPT2, dtype) == per_parameter * P


def test_int4_packs_two_weights_per_byte() -> None:
    P = golden("gpt2")["parameters_total"]
    assert weight_bytes(GPT2, "int4") == P // 2
    # D = V = 1, one head, FFN width 1, no biases or norms: token 1 + q/k/v 3 + output 1
    # + FFN 2 = 7 parameters; the odd one still takes a whole byte.
    tiny = ModelSpec(
        vocab_size=1,
        context_length=1,
        d_model=1,
        n_layers=1,
        n_heads=1,
        position="none",
        ffn_hidden=1,
        norm="rmsnorm",
        norms_per_block=0,
        final_norm=False,
        qkv_bias=False,
        attn_out_bias=False,
        ffn_bias=False,
    )
    assert weight_bytes(tiny, "int4") == 4


def test_gradients_and_master_weights() -> None:
    P = golden("gpt2")["parameters_total"]
    assert gradient_bytes(GPT2, "bf16") == 2 * P
    assert master_weight_bytes(GPT2) == 4 * P


# --------------------------------------------------------------------------- activations


def test_blocks_not_measured_follow_korthikanti_per_part() -> None:
    # Korthikanti et al. 2022, Sec. 4.1: attention block 11 sbh + 5 a s^2 b, MLP 19 sbh,
    # two layer norms 4 sbh; total sbh (34 + 5 a s / h) per layer, 16-bit activations.
    s, b, h, a = 1024, 1, 768, 12
    attention, mlp, norms = 11 * s * b * h + 5 * a * s * s * b, 19 * s * b * h, 4 * s * b * h
    scores = 5 * a * s * s * b
    assert sum(t.bytes for t in korthikanti_terms(GPT2, b, s, "none")) == attention + mlp + norms
    assert korthikanti_score_bytes(GPT2, b, s) == scores
    assert sum(t.bytes for t in korthikanti_terms(GPT2, b, s, "full")) == 2 * s * b * h
    # a block of a kind not measured (an output gate on attention) keeps the estimate
    gated = GPT2.model_copy(update={"attention_gate": True})
    assert not measured(gated)
    assert layers_activation_bytes(gated, b, s, "none", "eager", "bf16") == 12 * (
        attention + mlp + norms
    )


@pytest.mark.parametrize(
    ("recompute", "attention", "stored"),
    [
        ("none", "eager", True),
        ("none", "sdpa", False),
        ("none", "flash", False),
        ("selective", "eager", False),
        ("full", "eager", False),
        ("full", "sdpa", False),
    ],
)
def test_only_eager_attention_without_recomputation_keeps_the_scores(
    recompute: str, attention: str, stored: bool
) -> None:
    # transformers' Llama-derived eager attention (Qwen2): the fp32 softmax output and its bf16
    # copy, (4 + 2) B H s^2 bytes per layer; selective recomputation drops exactly these, and
    # a kernel that never stores them (FlashAttention, PyTorch's fused SDPA kernels) has none.
    s, b = 1024, 8
    scores = 24 * 6 * 14 * s * s * b  # Qwen2.5-0.5B: 24 layers, 14 heads
    kept = attention_score_bytes(QWEN, b, s, recompute, attention, "bf16")
    assert kept == (scores if stored else 0)
    # the rest of eager's layout: keys and values expanded to H heads and the output copied,
    # 2 N d (2 H - 2 K) bytes in bf16, where sdpa keeps an fp32 log-sum-exp, 4 B H s
    N, H, K, d = b * s, 14, 2, 64
    layout = 24 * (2 * N * d * (2 * H - 2 * K) - 4 * b * H * s)
    eager = attention == "eager" and recompute != "full"
    with_scores = activation_bytes(QWEN, b, s, recompute, attention, "bf16")
    sdpa = activation_bytes(QWEN, b, s, recompute, "sdpa", "bf16")
    assert with_scores == sdpa + kept + (layout if eager else 0)


def test_logits_and_their_fp32_log_probabilities() -> None:
    # Qwen2.5-0.5B, V = 151,936: B T V logits in bf16, and the fp32 log-probabilities
    # cross_entropy saves (tests/golden/activation_reference.json: 4 B T V in bf16 and fp32)
    setup = memory_setup(dtype="bf16", train=True, batch=8, length=1024)
    r = memory_report(QWEN, setup)
    assert r.elements_logits == 8 * 1024 * 151_936
    assert (r.bytes_logits, r.bytes_logits_fp32) == (2 * r.elements_logits, 4 * r.elements_logits)
    fp32 = memory_report(QWEN, memory_setup(dtype="fp32", train=True, batch=8, length=1024))
    assert (fp32.bytes_logits, fp32.bytes_logits_fp32) == (4 * r.elements_logits,) * 2
    assert memory_report(QWEN, memory_setup(length=16)).bytes_logits == 0  # inference


def test_training_needs_a_length() -> None:
    with pytest.raises(UsageError, match=r"give -T LENGTH .*context is 32,768 tokens"):
        memory_report(QWEN, memory_setup(train=True))


@given(specs(), st.integers(1, 8), st.integers(1, 4096), st.sampled_from(RECOMPUTE_MODES))
def test_activations_are_linear_in_batch(
    spec: ModelSpec, batch: int, length: int, recompute: str
) -> None:
    # up to MoE's int32 offsets per expert, 4 E per layer whatever the batch
    offsets = sum(
        stack.n_layers * 4 * stack.experts
        for stack in spec.stacks
        if measured(stack) and stack.experts > 1 and recompute != "full"
    )
    one = layers_activation_bytes(spec, 1, length, recompute, "eager", "bf16") - offsets
    many = layers_activation_bytes(spec, batch, length, recompute, "eager", "bf16") - offsets
    assert many == batch * one


@given(specs(), st.integers(1, 4096))
def test_recomputation_only_ever_saves(spec: ModelSpec, length: int) -> None:
    none, selective, full = (
        activation_bytes(spec, 2, length, r, "eager", "bf16") for r in ("none", "selective", "full")
    )
    assert none >= selective >= full
    assert none - selective == attention_score_bytes(spec, 2, length, "none", "eager", "bf16")


# --------------------------------------------------------------------------- the whole report


@given(
    specs(),
    st.booleans(),
    st.sampled_from(OPTIMIZERS),
    st.booleans(),
    st.sampled_from(ATTENTION_KERNELS),
)
def test_the_rows_shown_add_up_to_the_total(
    spec: ModelSpec, train: bool, optimizer: str, mixed: bool, attention: str
) -> None:
    training = {
        "optimizer": optimizer,
        "mixed_precision": mixed,
        "attention": attention,
        "length": min(64, spec.context_length),
    }
    options = training if train else {}
    setup = memory_setup(dtype="bf16", train=train, **options)  # type: ignore[arg-type]
    model = LoadedModel(spec, "model", "test")
    result = memory_result(model, setup)
    rows = result.components()
    assert sum(row.bytes for row in rows) == result.report.bytes_total
    assert ("master_weights" in {row.key for row in rows}) == (train and mixed)
    assert sum(result.share(row) for row in rows) == 1


def test_bars_are_proportional() -> None:
    assert bar(Fraction(1, 2), 30) == "█" * 15 + "·" * 15
    assert bar(Fraction(1), 30) == "█" * 30
    assert bar(Fraction(1, 1000), 30) == "▏" + "·" * 29
    assert bar(Fraction(0), 30) == "·" * 30


def test_inference_is_weights_and_kv_cache() -> None:
    r = memory_report(GPT2, memory_setup(dtype="bf16", length=16))
    assert r.bytes_total == 2 * 124_439_808 + 2 * 294_912
    assert r.bytes_gradients == r.bytes_optimizer == r.bytes_activations == 0


def test_length_defaults_to_the_context_and_kv_dtype_to_the_weights() -> None:
    r = memory_report(GPT2, memory_setup(dtype="fp32"))
    assert (r.length, r.kv_dtype) == (1024, "fp32")
    assert memory_report(GPT2, memory_setup(dtype="int4")).kv_dtype == "bf16"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "fp64"}, "unknown dtype or format 'fp64'"),
        ({"kv_dtype": "q4"}, "unknown KV-cache dtype 'q4'"),
        ({"train": True, "optimizer": "adam"}, "unknown optimizer 'adam'"),
        ({"train": True, "recompute": "some"}, "unknown recompute mode 'some'"),
        ({"train": True, "recompute": "flash"}, "flash is an attention kernel.*--attention flash"),
        ({"train": True, "attention": "fast"}, "unknown attention kernel 'fast'"),
        ({"attention": "eager"}, "--attention applies to training; add --train"),
        ({"optimizer": "sgd"}, "--optimizer applies to training; add --train"),
        ({"train": True, "dtype": "int8"}, "training keeps weights and gradients in"),
        ({"train": True, "dtype": "fp32", "mixed_precision": True}, "mixed precision trains"),
    ],
)
def test_bad_setups_are_usage_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        memory_setup(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [{"batch": 0}, {"length": -1}])
def test_bad_sizes_are_range_errors(kwargs: dict[str, int]) -> None:
    with pytest.raises(RangeError, match="expected a positive whole number"):
        memory_setup(**kwargs)  # type: ignore[arg-type]


def test_length_past_a_learned_table_is_a_range_error() -> None:
    with pytest.raises(RangeError, match="past the learned position table of 1,024 positions"):
        memory_report(GPT2, memory_setup(length=1025))
