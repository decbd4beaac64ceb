"""GGUF files against llama.cpp's quantizer (tests/golden/llama_quantize.json, written by
tests/reference/make_llama_quantize_reference.py: llama_model_quantize on random-weight F16 GGUF
files of four architectures, to every file type llama-quantize offers)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from costcalc.errors import UsageError
from costcalc.files import Document
from costcalc.gguf_types import FILE_TYPES, GGML_QUANT_SIZES
from costcalc.loaders import load_document
from costcalc.quant import format_bytes
from costcalc.weight_format import parse_format

GOLDEN = json.loads((Path(__file__).parent / "golden" / "llama_quantize.json").read_text())
CASES = [
    (arch, label, expected)
    for arch, model in GOLDEN["models"].items()
    for label, expected in model["files"].items()
]


def test_ggml_type_table_equals_the_library() -> None:
    """ggml_blck_size and ggml_type_size of every type costcalc sizes."""
    for name, size in GGML_QUANT_SIZES.items():
        assert tuple(GOLDEN["ggml_types"][name]) == size, name


def test_every_file_type_was_quantized() -> None:
    """The golden data covers every file type costcalc takes, on every architecture."""
    for model in GOLDEN["models"].values():
        assert {parse_format(label).gguf_type for label in model["files"]} == set(FILE_TYPES)


@pytest.mark.parametrize(
    ("arch", "label", "expected"), CASES, ids=[f"{a}-{f}" for a, f, _ in CASES]
)
def test_gguf_bytes_equal_llama_quantize(arch: str, label: str, expected: dict) -> None:
    """Bytes per tensor type, and in all, of the file llama_model_quantize wrote."""
    spec = load_document(Document(arch, GOLDEN["models"][arch]["config"])).spec
    fmt = parse_format(label)
    if "error" in expected:
        with pytest.raises(UsageError, match="no fallback"):
            format_bytes(spec, fmt)
        return
    rows = format_bytes(spec, fmt)
    by_type: Counter[str] = Counter()
    for row in rows.tensors:
        by_type[row.kind] += row.bytes
    assert dict(by_type) == expected["bytes_by_type"]
    assert rows.bytes == expected["bytes"]
