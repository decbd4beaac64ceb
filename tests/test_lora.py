"""LoRA counts against peft (tests/golden/lora_reference.json, make_lora_reference.py)."""

from __future__ import annotations

import json
from collections import Counter
from math import prod
from pathlib import Path

import pytest

from costcalc.api import load
from costcalc.errors import UsageError
from costcalc.loaders import LoadedModel, load_file, load_preset
from costcalc.lora import ALL_LINEAR, family_names, lora_config, lora_report, sites
from costcalc.lora_memory import LoraMemory, lora_memory, lora_training, nf4_bytes
from costcalc.memory import (
    MemoryReport,
    attention_score_bytes,
    layers_activation_bytes,
    memory_report,
    memory_setup,
)
from tests.differential_configs import merged

ROOT = Path(__file__).resolve().parent
GOLDEN = json.loads((ROOT / "golden" / "lora_reference.json").read_text())
FIXTURES = ROOT / "fixtures" / "hf"
LORA_WEIGHTS = (
    "experts.gate_up_proj",
    "experts.down_proj",
    "gate.weight",
    "router.weight",
    "input_linear.weight",
    "output_linear.weight",
)
"""The bare weights LoRA can adapt (stacked experts, JetMoE's included; routers that are no
``nn.Linear``)."""


def _golden_model(name: str) -> LoadedModel:
    """A fixture, or a variant the reference built (a fixture with keys set, ``variants``)."""
    variant = GOLDEN["variants"].get(name)
    if variant is None:
        return load_file(FIXTURES / f"{name}.json")
    data = json.loads((FIXTURES / f"{variant['fixture']}.json").read_text())
    return load(merged(data, variant["set"]))


def _config(record: dict):
    c = record["config"]
    targets = c.get("target_modules", [])
    return lora_config(
        c["r"],
        [ALL_LINEAR] if targets == ALL_LINEAR else targets,
        c.get("target_parameters", []),
        c.get("bias", "none"),
        c.get("modules_to_save", []),
        c.get("use_dora", False),
    )


@pytest.mark.parametrize("case", sorted(GOLDEN["cases"]))
def test_trainable_and_total_equal_peft(case: str) -> None:
    record = GOLDEN["cases"][case]
    model = _golden_model(record["fixture"])
    if "error" in record:  # peft refuses the config, and so does costcalc
        with pytest.raises(UsageError, match=r"refuses LoRA on|nothing to adapt|targeted together"):
            lora_report(model.spec, model.family, _config(record))
        return
    report = lora_report(model.spec, model.family, _config(record))
    assert report.base_total == record["base_total"]
    assert (report.trainable, report.total) == (record["trainable"], record["total"])
    modules = {m.name: {"modules": m.modules, "added": m.added} for m in report.modules}
    assert modules == record["modules"]
    assert dict(report.saved) == record["modules_to_save"]
    shapes = report.adapter_shapes  # each adapter tensor, as FSDP shards them
    assert sum(copies * prod(shape) for shape, copies in shapes) == report.adapter_params
    assert sum(copies for _, copies in shapes) == report.adapter_tensors


def test_golden_covers_the_brief() -> None:
    """At least 8 cases over GPT-2, Qwen2.5, a Llama, MoE models and a newer family, with
    all-linear, DoRA, bias=all and lm_head saved."""
    cases = GOLDEN["cases"].values()
    fixtures = {c["fixture"] for c in cases}
    assert len(GOLDEN["cases"]) >= 8
    assert {"gpt2", "qwen2.5-0.5b", "llama-3.2-1b", "tiny-mixtral", "qwen3-0.6b"} <= fixtures
    configs = [c["config"] for c in cases]
    assert any(c.get("target_modules") == ALL_LINEAR for c in configs)
    assert any(c.get("use_dora") for c in configs)
    assert any(c.get("bias") == "all" for c in configs)
    assert any("lm_head" in c.get("modules_to_save", []) for c in configs)
    assert any(c.get("target_parameters") for c in configs)


NEWER_FAMILIES = {
    "gemma3n_text",
    "gemma4_text",
    "deepseek_v32",
    "minimax_m2",
    "glm4_moe_lite",
    "granitemoehybrid",
    "falcon_h1",
    "olmo",
    "glm",
    "hunyuan_v1_moe",
    "dots1",
    "lfm2_moe",
    "kimi_linear",
    "mamba",
    "zamba2",
    "zamba",
}


def test_golden_covers_newer_families() -> None:
    """all-linear on each newer family peft was run on, and experts through target_parameters
    in its MoE families."""
    cases = GOLDEN["cases"].values()
    family = {c["fixture"]: _golden_model(c["fixture"]).family for c in cases}
    all_linear = {
        family[c["fixture"]] for c in cases if c["config"]["target_modules"] == ALL_LINEAR
    }
    experts = {family[c["fixture"]] for c in cases if c["config"].get("target_parameters")}
    assert all_linear >= NEWER_FAMILIES
    assert experts >= {"gemma4_text", "deepseek_v32", "minimax_m2", "glm4_moe_lite", "lfm2_moe"}


def test_golden_covers_every_family() -> None:
    """Every registered model_type has a peft case with all-linear and one with targets named,
    and, where it has stacked experts or a bare router weight, one that adapts them."""
    from costcalc.formats.families import registry

    models = {f: _golden_model(f) for f in {c["fixture"] for c in GOLDEN["cases"].values()}}
    by_kind: dict[str, set[str]] = {"all-linear": set(), "named": set(), "parameters": set()}
    for c in GOLDEN["cases"].values():
        family, config = models[c["fixture"]].family, c["config"]
        kind = "all-linear" if config["target_modules"] == ALL_LINEAR else "named"
        by_kind[kind].add(family)
        if any("." in name for name in c.get("modules", {})):  # stacked or bare weights adapted
            by_kind["parameters"].add(family)
    assert by_kind["all-linear"] == by_kind["named"] == set(registry())
    with_weights = {
        m.family
        for m in models.values()
        if any(s.kind == "parameter" for s in sites(m.spec, family_names(m.family)))
    }
    assert with_weights <= by_kind["parameters"]


def test_mamba_out_proj_is_refused_as_peft_refuses_it() -> None:
    model = load_file(FIXTURES / "mamba-130m.json")
    with pytest.raises(UsageError, match=r"refuses LoRA on mixer\.out_proj in mamba models"):
        lora_report(model.spec, model.family, lora_config(8, ["in_proj", "out_proj"]))
    bamba = load_file(FIXTURES / "granite-4.0-h-tiny.json")
    report = lora_report(bamba.spec, bamba.family, lora_config(8, ["out_proj"]))
    assert report.modules[0].name == "out_proj"


def _listed(fixture: str) -> tuple[Counter, Counter]:
    """peft-relevant weights transformers builds, and costcalc's sites, as
    (kind, name, sorted shape, bias) -> count."""
    record = GOLDEN["linear_modules"][fixture]
    model = _golden_model(fixture)
    names = family_names(model.family)
    found = sites(model.spec, names)
    biases = {t.removesuffix(".bias") for t in _bias_names(model.spec)} - names.loose_biases
    ours: Counter = Counter()
    for s in found:
        if s.kind == "embedding":
            continue
        bias = s.generic in biases and s.kind != "parameter"
        ours[(s.kind, s.path, tuple(sorted(s.shape)), bias)] += s.copies
    theirs: Counter = Counter()
    for m in record["modules"]:
        if m["kind"] == "embedding":
            continue
        if m["kind"] == "parameter" and not m["name"].endswith(LORA_WEIGHTS):
            continue
        name = m["name"]
        if m["kind"] != "parameter":
            name = next((s.path for s in found if _tail_of(name, s.path)), name)
        theirs[(m["kind"], name, tuple(sorted(m["shape"])), m["bias"])] += m["count"]
    return theirs, ours


def _bias_names(spec) -> set[str]:
    from costcalc.tensors import parameter_tensors

    return {t.name for t in parameter_tensors(spec) if t.name.endswith(".bias")}


def _tail_of(name: str, path: str) -> bool:
    return name == path or name.endswith(f".{path}")


@pytest.mark.parametrize("fixture", sorted(GOLDEN["linear_modules"]))
def test_family_names_name_every_linear_layer(fixture: str) -> None:
    """Every nn.Linear (and Conv1D), stacked expert and router weight transformers builds is a
    costcalc site of the same name, shape, bias and count, and nothing else is."""
    theirs, ours = _listed(fixture)
    assert (theirs - ours, ours - theirs) == (Counter(), Counter())


@pytest.mark.parametrize("fixture", sorted(GOLDEN["linear_modules"]))
def test_family_names_name_the_tables(fixture: str) -> None:
    """costcalc's tables (token, position, per-layer, product-key experts') are the embeddings
    transformers builds, of that name (its path's tail) and shape, each one of them."""
    model = _golden_model(fixture)
    found = sites(model.spec, family_names(model.family))
    theirs = [
        (m["name"], sorted(m["shape"]))
        for m in GOLDEN["linear_modules"][fixture]["modules"]
        if m["kind"] == "embedding"
    ]
    ours = [(s.path, sorted(s.shape)) for s in found if s.kind == "embedding"]
    for path, shape in ours:
        assert any(_tail_of(n, path) and shape == their for n, their in theirs)
    for name, shape in theirs:  # and every table transformers builds is one of costcalc's
        assert any(_tail_of(name, path) and shape == our for path, our in ours), name


# --------------------------------------------------------------------------- refusals


def _gpt2():
    return load_file(FIXTURES / "gpt2.json")


def test_a_target_matching_nothing_lists_the_model_s_layers() -> None:
    model = _gpt2()
    with pytest.raises(UsageError, match=r"'q_proj' matches no linear layer or t.*attn\.c_attn"):
        lora_report(model.spec, model.family, lora_config(8, ["q_proj"]))


def test_gpt2_c_proj_hits_attention_and_mlp() -> None:
    model = _gpt2()
    report = lora_report(model.spec, model.family, lora_config(8, ["c_proj"]))
    assert [(m.name, m.modules) for m in report.modules] == [("c_proj", 24)]
    # both shapes transformers builds under the name: attn.c_proj D x D, mlp.c_proj D x 4D
    built = [m for m in GOLDEN["linear_modules"]["gpt2"]["modules"] if "c_proj" in m["name"]]
    assert [list(shape) for shape in report.modules[0].shapes] == [m["shape"] for m in built]
    assert len(built) == 2
    only_attn = lora_report(model.spec, model.family, lora_config(8, ["attn.c_proj"]))
    assert only_attn.modules[0].modules == 12
    assert only_attn.modules[0].shapes == ((768, 768),)


def test_a_module_hit_by_two_targets_is_adapted_once() -> None:
    model = _gpt2()
    both = lora_report(model.spec, model.family, lora_config(8, ["c_proj", "attn.c_proj"]))
    alone = lora_report(model.spec, model.family, lora_config(8, ["c_proj"]))
    assert both.trainable == alone.trainable


def test_dora_on_stacked_experts_is_refused() -> None:
    model = load_file(FIXTURES / "tiny-mixtral.json")
    with pytest.raises(UsageError, match="DoRA"):
        lora_report(model.spec, model.family, lora_config(8, [ALL_LINEAR], dora=True))


def test_half_of_fused_experts_is_refused() -> None:
    model = load_file(FIXTURES / "tiny-mixtral.json")
    with pytest.raises(UsageError, match="w3"):
        lora_report(model.spec, model.family, lora_config(8, ["w1"]))


def test_unknown_family_is_refused() -> None:
    with pytest.raises(UsageError, match="module names of the gemma3 family"):
        family_names("gemma3")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rank": 0, "targets": ["q_proj"]}, "positive"),
        ({"rank": 8, "targets": []}, "name what to adapt"),
        ({"rank": 8, "targets": ["all-linear", "q_proj"]}, "stands alone"),
        ({"rank": 8, "targets": ["layers.0.q_proj"]}, "every layer alike"),
        ({"rank": 8, "targets": ["q_proj"], "bias": "some"}, "bias mode"),
    ],
)
def test_bad_configs_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        lora_config(**kwargs)


def test_saving_a_block_module_is_refused() -> None:
    model = _gpt2()
    with pytest.raises(UsageError, match="the tables and the LM head; this model's: "):
        lora_report(model.spec, model.family, lora_config(8, ["c_attn"], modules_to_save=["ln_f"]))


def test_costcalc_models_use_llama_names() -> None:
    model = load_preset("qwen2.5-0.5b")
    fixture = load_file(FIXTURES / "qwen2.5-0.5b.json")
    config = lora_config(8, ["q_proj", "v_proj"])
    assert model.family is None
    assert (
        lora_report(model.spec, None, config).trainable
        == lora_report(fixture.spec, fixture.family, config).trainable
    )


# --------------------------------------------------------------------------- training memory

TRAINING = sorted(case for case, r in GOLDEN["cases"].items() if "training_bf16" in r)


@pytest.mark.parametrize("case", TRAINING)
def test_training_state_equals_torch(case: str) -> None:
    """A bf16 base under peft (adapters upcast to fp32): frozen and trainable bytes, gradients
    and AdamW's state after one step equal what torch holds."""
    record = GOLDEN["cases"][case]
    measured = record["training_bf16"]
    model = _golden_model(record["fixture"])
    report = lora_report(model.spec, model.family, _config(record))
    memory = lora_memory(model.spec, family_names(model.family), report, lora_training(length=8))
    biases = 2 * report.bias_elements  # trained biases stay bf16 inside the base
    assert memory.bytes_frozen_float - biases == measured["frozen_bytes"]
    assert memory.bytes_adapters + memory.bytes_saved + biases == measured["trainable_bytes"]
    assert memory.bytes_gradients == measured["gradient_bytes"]
    assert memory.bytes_optimizer == measured["adamw_state_bytes"]
    assert (
        report.adapter_tensors + report.saved_tensors + report.bias_tensors
        == (measured["trainable_tensors"])
    )


def test_nf4_bytes_follow_bitsandbytes() -> None:
    """quantize_4bit: (n + 1) // 2 packed bytes; fp32 absmax per 64 values, or uint8 absmax with
    an fp32 scale per 256 blocks and an fp32 offset."""
    n = 4096 * 4096
    blocks = n // 64
    assert nf4_bytes(n, double_quant=False) == n // 2 + 4 * blocks
    assert nf4_bytes(n, double_quant=True) == n // 2 + blocks + 4 * (blocks // 256) + 4
    assert nf4_bytes(65, double_quant=False) == 33 + 4 * 2
    assert nf4_bytes(65, double_quant=True) == 33 + 2 + 4 + 4


def test_qlora_quantizes_every_linear_but_the_head() -> None:
    model = load_preset("llama-3.1-8b")
    report = lora_report(model.spec, None, lora_config(16, [ALL_LINEAR]))
    memory = lora_memory(model.spec, family_names(None), report, lora_training("nf4", length=2048))
    D, L, V = 4096, 32, 128256
    linears = L * (D * D * 2 + 2 * 1024 * D + 3 * 14336 * D)
    assert memory.elements_quantized == linears
    assert memory.elements_frozen_float == report.base_total - linears
    assert memory.bytes_frozen_float == 2 * (2 * V * D + (2 * L + 1) * D)
    int8 = lora_memory(model.spec, family_names(None), report, lora_training("int8", length=8))
    rows = L * (D + 1024 + 1024 + D + 2 * 14336 + D)
    assert int8.bytes_quantized == linears + 4 * rows


def test_double_quant_needs_nf4() -> None:
    with pytest.raises(UsageError, match="--double-quant applies to --base-dtype nf4"):
        lora_training("bf16", double_quant=True)


# --------------------------------------------------------------------------- shared with memory

SHARED = [
    # (fixture, targets, base dtype, memory --train dtype: the float dtype of the frozen weights)
    ("gpt2", ["c_attn"], "bf16", "bf16"),
    ("qwen2.5-0.5b", [ALL_LINEAR], "nf4", "bf16"),
    ("llama-3.2-1b", ["q_proj", "v_proj"], "fp32", "fp32"),
    ("tiny-jamba", ["q_proj", "v_proj"], "int8", "bf16"),
]


def _both(
    fixture: str,
    targets: list[str],
    base: str,
    batch: int,
    length: int,
    recompute: str,
    attention: str,
) -> tuple[LoraMemory, MemoryReport]:
    """lora --train's memory and memory --train's in the float dtype of lora's frozen weights."""
    model = load_file(FIXTURES / f"{fixture}.json")
    report = lora_report(model.spec, model.family, lora_config(8, targets))
    training = lora_training(
        base, batch=batch, length=length, recompute=recompute, attention=attention
    )
    setup = memory_setup(
        training.float_dtype,
        train=True,
        batch=batch,
        length=length,
        recompute=recompute,
        attention=attention,
    )
    return (
        lora_memory(model.spec, family_names(model.family), report, training),
        memory_report(model.spec, setup),
    )


def _activations_and_logits(memory: LoraMemory | MemoryReport) -> int:
    return memory.bytes_activations + memory.bytes_logits + memory.bytes_logits_fp32


@pytest.mark.parametrize(("fixture", "targets", "base", "dtype"), SHARED)
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("attention", ["eager", "sdpa", "flash"])
def test_activations_and_logits_equal_memory_train(
    fixture: str, targets: list[str], base: str, dtype: str, recompute: str, attention: str
) -> None:
    """LoRA trains through every layer: its activations, scores and logits are full training's
    at the same B, T, recomputation and kernel, the logits in the frozen weights' float dtype."""
    lora, full = _both(fixture, targets, base, 3, 96, recompute, attention)
    assert _activations_and_logits(lora) == _activations_and_logits(full)
    assert lora.bytes_attention_scores == full.bytes_attention_scores
    assert lora.training.float_dtype == full.setup.dtype == dtype
    V = load_file(FIXTURES / f"{fixture}.json").spec.vocab_rows
    assert lora.elements_logits == 3 * 96 * V
    assert lora.bytes_logits_fp32 == 4 * 3 * 96 * V  # fp32 log-probabilities in every dtype


@pytest.mark.parametrize(("fixture", "targets", "base", "dtype"), SHARED)
def test_eager_adds_exactly_the_scores(
    fixture: str, targets: list[str], base: str, dtype: str
) -> None:
    """Eager attention minus sdpa is the stored T x T scores and the kernels' other layouts
    (eager's expanded keys and values, sdpa's log-sum-exp), as memory --train counts them;
    with recomputation neither stores the scores."""
    spec = load_file(FIXTURES / f"{fixture}.json").spec
    scores = attention_score_bytes(spec, 2, 64, "none", "eager", dtype)
    assert scores > 0
    layers = {k: layers_activation_bytes(spec, 2, 64, "none", k, dtype) for k in ("eager", "sdpa")}
    eager, _ = _both(fixture, targets, base, 2, 64, "none", "eager")
    sdpa, _ = _both(fixture, targets, base, 2, 64, "none", "sdpa")
    difference = _activations_and_logits(eager) - _activations_and_logits(sdpa)
    assert difference == layers["eager"] - layers["sdpa"]
    assert eager.bytes_attention_scores == scores and sdpa.bytes_attention_scores == 0
    for kernel in ("eager", "sdpa"):
        assert (
            _both(fixture, targets, base, 2, 64, "selective", kernel)[0].bytes_attention_scores == 0
        )


def test_training_needs_a_length_as_memory_does() -> None:
    """No -T: the same UsageError as memory --train, naming the model's context."""
    model = load_file(FIXTURES / "gpt2.json")
    report = lora_report(model.spec, model.family, lora_config(8, ["c_attn"]))
    with pytest.raises(UsageError) as lora_error:
        lora_memory(model.spec, family_names(model.family), report, lora_training())
    with pytest.raises(UsageError) as memory_error:
        memory_report(model.spec, memory_setup(train=True))
    assert str(lora_error.value) == str(memory_error.value)
    assert "1,024 tokens" in str(lora_error.value)
