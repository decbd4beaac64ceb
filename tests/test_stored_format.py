"""The weight format a checkpoint stores, from its quantization_config, by default everywhere:
compressed-tensors' layouts against the library (tests/golden/quant_reference.json), the
published gpt-oss-20b checkpoint, each quant_method's keys, module patterns, per-layer
exceptions, and what is refused or only noted."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from costcalc.api import count, count_memory
from costcalc.checkpoint import Checkpoint, TensorInfo
from costcalc.errors import ConfigError, UsageError
from costcalc.files import Document
from costcalc.formats.hf_quant import compressed_tensors_format
from costcalc.loaders import LoadedModel, load_document, load_file
from costcalc.quant import format_bytes, matrix_bytes, weight_bytes
from costcalc.stored_weights import stored_bytes
from costcalc.weight_format import parse_format
from tests.conftest import FIXTURES

GOLDEN = json.loads((Path(__file__).parent / "golden" / "quant_reference.json").read_text())
CT_CASES = GOLDEN["compressed_tensors"]["cases"] + GOLDEN["compressed_tensors_actorder"]["cases"]
LLAMA = json.loads((FIXTURES / "hf" / "llama-3.1-8b.json").read_text())
QWEN_MOE = json.loads((FIXTURES / "hf" / "qwen1.5-moe-a2.7b.json").read_text())
OSS = FIXTURES / "hf" / "gpt-oss-20b.json"
OSS_INDEX_ONLY = FIXTURES / "index-only" / "gpt-oss-20b"
OSS_BYTES = 13_761_264_768
"""The published openai/gpt-oss-20b model.safetensors.index.json metadata.total_size."""


def loaded(config: dict[str, Any], quantization: Any, where: str = "") -> LoadedModel:
    data = copy.deepcopy(config)
    (data[where] if where else data)["quantization_config"] = quantization
    return load_document(Document("config.json", data))


def stored(config: dict[str, Any], quantization: Any) -> str | None:
    return loaded(config, quantization).weight_format


@pytest.mark.parametrize(
    "case", CT_CASES, ids=[f"{c['scheme']}-{c['shape'][0]}x{c['shape'][1]}" for c in CT_CASES]
)
def test_compressed_tensors_layouts_equal_the_library(case: dict) -> None:
    """compressed-tensors compressed a bf16 linear layer (0.20.1; group activation order: 0.12.2);
    the format its scheme maps to gives the bytes of every tensor it wrote."""
    weights = case.get("weights") or {
        "num_bits": 4,
        "type": "int",
        "strategy": "group",
        "group_size": 128,
        "actorder": "group",
    }
    label = compressed_tensors_format(weights, case.get("input_activations"), case["format"])
    assert label is not None, case["scheme"]
    out, inp = case["shape"]
    assert matrix_bytes(parse_format(label), out, inp) == case["bytes"], label


def test_gpt_oss_20b_by_default_is_its_published_checkpoint() -> None:
    """Experts in MXFP4 (modules_to_not_convert: attention, router, embeddings, LM head):
    13,761,264,768 bytes, the published index's total_size."""
    model = load_file(OSS)
    assert model.weight_format == "mxfp4:-attn"
    assert weight_bytes(model.spec, parse_format(model.weight_format)) == OSS_BYTES
    result = count_memory(OSS, length=4096)
    assert result.report.bytes_weights == OSS_BYTES
    assert result.to_dict()["weights"]["stored_format"] == "mxfp4:-attn"
    assert count_memory(OSS, length=4096, dtype="bf16").report.bytes_weights == 41_829_514_368
    assert count(OSS).weight_bytes["mxfp4:-attn"] == OSS_BYTES
    assert count(OSS).to_dict()["weight_format"] == "mxfp4:-attn"


def test_an_index_without_shards_shows_its_total_beside_the_formula() -> None:
    model = load_file(OSS_INDEX_ONLY)
    assert model.checkpoint is None and model.checkpoint_index is not None
    assert model.checkpoint_index.total_size == OSS_BYTES
    found = stored_bytes(model, "mxfp4:-attn", OSS_BYTES)
    assert found is not None and found.difference == 0
    assert "equal to the formula's" in found.sentence()
    assert stored_bytes(model, "bf16", 1) is None
    data = count_memory(OSS_INDEX_ONLY, length=8).to_dict()["weights"]["checkpoint"]
    assert data["bytes"] == data["formula"] == OSS_BYTES


def test_memory_names_the_stored_format(cli: Any) -> None:
    result = cli("memory", "-c", str(OSS_INDEX_ONLY), "-T", "4096")
    text = " ".join(result.stdout.split())
    assert result.exit_code == 0
    assert "mxfp4:-attn" in text and "13,761,264,768" in text
    assert "Weights as the checkpoint stores them (its quantization_config, quant_method" in text
    assert "metadata.total_size" in text and "equal to the formula's" in text
    other = " ".join(cli("memory", "-c", str(OSS), "-T", "8", "--dtype", "nf4").stdout.split())
    assert "The checkpoint stores its weights as mxfp4:-attn" in other


def test_training_counts_bf16_and_says_what_is_stored() -> None:
    result = count_memory(OSS, train=True, length=8)
    assert result.report.setup.dtype == "bf16"
    assert result.weights_note is not None and "counted here as bf16" in result.weights_note


def test_check_measures_budgets_in_the_stored_format(cli: Any) -> None:
    over = cli("check", str(OSS), "--max-weight-bytes", f"{OSS_BYTES - 1}B")
    fits = cli("check", str(OSS), "--max-weight-bytes", f"{OSS_BYTES}B")
    assert over.exit_code == 1 and fits.exit_code == 0, fits.stdout
    assert "mxfp4:-attn weights take 13,761,264,768 bytes" in " ".join(over.stdout.split())
    raw = cli("check", str(OSS), "--max-weight-bytes", f"{OSS_BYTES}B", "--dtype", "bf16")
    assert raw.exit_code == 1


@pytest.mark.parametrize(
    ("quantization", "label"),
    [
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8-block"),
        ({"quant_method": "fp8"}, "fp8-block"),  # FineGrainedFP8Config's default block
        ({"quant_method": "fp8", "weight_block_size": None}, "fp8-tensor"),
        ({"quant_method": "fp8", "weight_block_size": [64, 64]}, "fp8-block:b64"),
        ({"quant_method": "fp8", "scale_fmt": "ue8m0"}, "fp8-block:scale=e8m0"),
        ({"quant_method": "fp8", "activation_scheme": "static"}, "fp8-block:static"),
        ({"quant_method": "FP8", "ignored_layers": ["model.layers.0.self_attn"]}, None),
        (
            {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.mlp", "down_proj"]},
            "fp8-block:-mlp@0,-mlp.down_proj@1..31",
        ),
        ({"quant_method": "fp8", "modules_to_convert": ["model.embed_tokens"]}, None),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True}, None),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1, "lm_head": True}, None),
        ({"quant_method": "gptq", "bits": 4, "dynamic": {"-:.*down_proj": {}}}, None),
        ({"quant_method": "awq", "bits": 4, "group_size": 64, "version": "GEMM"}, None),
        ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, None),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, None),
    ],
)
def test_each_quant_method_reads_its_keys(quantization: dict, label: str | None) -> None:
    expected = {
        "FP8": "fp8-block:-attn@0",
        "model.embed_tokens": "fp8-block:+embed_tokens",
        "desc_act": "gptq-int4:g128,rest=bf16",
        "lm_head": "gptq-int8:g-1,rest=bf16,+lm_head",
        "dynamic": "gptq-int4:g128,rest=bf16,-mlp.down_proj",
        "GEMM": "awq-int4:g64,rest=bf16",
        "nf4": "nf4:no-dq",
        "load_in_8bit": "llm-int8:rest=bf16",
    }
    if label is None:
        label = next(v for k, v in expected.items() if k in json.dumps(quantization))
    assert stored(LLAMA, quantization) == label


def test_per_layer_exceptions_move_those_layers_only() -> None:
    """model.layers.0.mlp kept: that layer's three FFN matrices in bf16, the others in fp8."""
    model = loaded(LLAMA, {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.mlp"]})
    assert model.weight_format == "fp8-block:-mlp@0"
    rows = format_bytes(model.spec, parse_format(model.weight_format)).tensors
    down = {(t.kind, t.copies) for t in rows if t.name == "mlp.down_proj.weight"}
    assert down == {("bf16", 1), ("fp8-block", 31)}
    whole = weight_bytes(model.spec, parse_format("fp8-block"))
    D, F = 4096, 14336
    fp8 = 3 * (D * F + 4 * 32 * 112)  # three D x F matrices: values + 128 x 128 block scales
    assert weight_bytes(model.spec, parse_format("fp8-block:-mlp@0")) - whole == 3 * 2 * D * F - fp8


def test_layer_options_are_checked() -> None:
    spec = load_document(Document("c.json", LLAMA)).spec
    with pytest.raises(UsageError, match="past the last"):
        format_bytes(spec, parse_format("nf4:-mlp@32"))
    for bad in ("nf4:-mlp@2..1", "nf4:-mlp@x", "nf4:-@3"):
        with pytest.raises(UsageError):
            parse_format(bad)
    assert parse_format("nf4:-mlp@3..3,+lm_head").label == "nf4:+lm_head,-mlp@3"


def test_compressed_tensors_targets_and_ignore() -> None:
    nvfp4 = {
        "quant_method": "compressed-tensors",
        "format": "nvfp4-pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 4,
                    "type": "float",
                    "strategy": "tensor_group",
                    "group_size": 16,
                    "symmetric": True,
                },
            }
        },
        "ignore": ["lm_head", "re:.*mlp.gate$", "re:.*shared_expert_gate$", "re:visual.*"],
    }
    model = loaded(QWEN_MOE, nvfp4)
    assert model.weight_format == "nvfp4:-mlp.shared_expert_gate"
    assert any("re:visual.*" in note for note in model.notes)
    only_mlp = copy.deepcopy(nvfp4)
    only_mlp["config_groups"]["group_0"]["targets"] = ["re:.*mlp\\..*_proj$"]
    assert stored(LLAMA, only_mlp) == "nvfp4:-attn"
    w8a8 = {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "g": {
                "format": "int-quantized",
                "weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
                "input_activations": {"num_bits": 8, "type": "int", "dynamic": True},
            }
        },
    }
    assert stored(LLAMA, w8a8) == "w8a8:+lm_head"  # targets Linear, and nothing ignored


@pytest.mark.parametrize(
    ("quantization", "note"),
    [
        ({"quant_method": "hqq"}, "quant_method 'hqq', a format costcalc does not size"),
        ({"quant_method": "gptq", "bits": 3}, "GPTQ with 3 bits"),
        ({"quant_method": "awq", "version": "gemv"}, "AWQ version 'gemv'"),
        ({"quant_method": "fp8", "weight_block_size": [128, 64]}, "is not square"),
        ({"quant_method": "bitsandbytes"}, "neither load_in_4bit nor load_in_8bit"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "a": {"targets": ["re:.*attn.*"], "weights": {"num_bits": 8, "type": "float"}},
                    "b": {"targets": ["re:.*mlp.*"], "weights": {"num_bits": 4, "type": "int"}},
                },
            },
            "several weight schemes",
        ),
    ],
)
def test_what_is_not_modelled_is_noted_and_counted_in_bf16(quantization: dict, note: str) -> None:
    model = loaded(LLAMA, quantization)
    assert model.weight_format is None
    assert any(note in n for n in model.notes), model.notes
    assert model.weights_dtype() == "bf16"


@pytest.mark.parametrize(
    ("quantization", "message"),
    [
        ("fp8", "expected an object"),
        ({"quant_method": "gptq", "bits": "four"}, "quantization_config.bits: expected a whole"),
        ({"quant_method": "fp8", "modules_to_not_convert": [3]}, "expected a module name"),
        ({"quant_method": "fp8", "modules_to_not_convert": ["(a+)+b"]}, "can take too long"),
        ({"quant_method": "fp8", "modules_to_not_convert": ["model.("]}, "no regular expression"),
        ({"quant_method": "fp8", "weight_block_size": [0, 0]}, "two positive whole numbers"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"targets": "x", "weights": 1}},
            },
            "config_groups.g.weights: expected an object",
        ),
    ],
)
def test_malformed_quantization_config_is_a_clear_error(quantization: Any, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        loaded(LLAMA, quantization)
    assert message in str(error.value)


def test_text_config_and_the_models_dtype() -> None:
    """A multimodal config keeps it under text_config; unquantized tensors are in torch_dtype."""
    vlm = {
        "model_type": "llava",
        "text_config": {**copy.deepcopy(LLAMA), "torch_dtype": "float16"},
    }
    vlm["text_config"]["quantization_config"] = {"quant_method": "fp8"}
    model = load_document(Document("config.json", vlm))
    assert model.weight_format == "fp8-block:rest=fp16"


def test_saved_bitsandbytes_extras_are_named() -> None:
    """A saved NF4 checkpoint's quant-state JSON (the offset inside it) and LLM.int8's
    weight_format byte are named, not left unexplained."""
    tensors = [
        TensorInfo("l.weight", "U8", (8, 1), 8, 8, "f"),
        TensorInfo("l.weight.nested_absmax", "F32", (1,), 1, 4, "f"),
        TensorInfo("l.weight.quant_state.bitsandbytes__nf4", "U8", (160,), 160, 160, "f"),
        TensorInfo("m.weight_format", "U8", (), 1, 1, "f"),
    ]
    cp = Checkpoint("ckpt", tuple(tensors), (), 173, 173, 173, {"U8": 169, "F32": 4}, {})
    model = load_document(Document("c.json", LLAMA))._replace(checkpoint=cp)
    model = model._replace(weight_format="nf4")
    found = stored_bytes(model, "nf4", 173 - 160 + 4 - 1)
    assert found is not None
    assert dict(found.extras) == {
        "bitsandbytes quant-state JSON": 160,
        "less the offsets it holds": -4,
        "LLM.int8 weight_format bytes": 1,
    }
    assert found.difference == found.explained
    assert "unexplained" not in found.sentence()


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ("{", "not JSON"),
        ('{"weight_map": {"w": "../x.safetensors"}}', "inside the index's folder"),
        ('{"weight_map": {}}', "weight_map is empty"),
    ],
)
def test_an_index_without_shards_is_still_checked(tmp_path: Path, index: str, message: str) -> None:
    from costcalc.errors import CheckpointError

    (tmp_path / "config.json").write_text(OSS.read_text())
    (tmp_path / "model.safetensors.index.json").write_text(index)
    with pytest.raises(CheckpointError, match=message):
        load_file(tmp_path)


def test_an_index_without_a_total_still_loads(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(OSS.read_text())
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": {"w": "a.safetensors"}}')
    model = load_file(tmp_path)
    assert model.checkpoint_index is not None and model.checkpoint_index.total_size is None
    assert stored_bytes(model, "mxfp4:-attn", OSS_BYTES) is None
