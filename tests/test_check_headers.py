"""`check` of a model folder judges its safetensors headers: a config that contradicts them is a
finding, and budgets count what the headers hold (the finding says so).

The folders are written by the safetensors library (tests/test_checkpoint_cli.py's tiny GPT-2:
1,872 parameters, 1,000 with one layer fewer); the expected counts are numpy's sizes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from costcalc.checkpoint import Checkpoint, TensorInfo
from costcalc.files import Document
from costcalc.header_check import judge_headers
from costcalc.loaders import load_document
from costcalc.memory import weight_bytes
from costcalc.transformers_types import ignored_on_load
from tests.conftest import FIXTURES, Invoke
from tests.test_checkpoint_cli import elements, gpt2_folder


def edited(folder: Path, **changes: Any) -> Path:
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def report(cli: Invoke, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli("check", *args, "--format", "json")
    (record,) = json.loads(result.stdout)
    return result.exit_code, record


def test_a_config_that_contradicts_its_headers_fails(cli: Invoke, tmp_path: Path) -> None:
    folder = edited(gpt2_folder(tmp_path), n_layer=1)
    assert elements(folder) == 1_872
    code, record = report(cli, str(folder), "--max-params", "1.5k")
    assert code == 1
    assert record["parameters"] == 1_000  # the config's formula
    header, budget = record["findings"]
    assert header["field"] is None
    assert "hold 1,872 parameters, the config's formula 1,000 (+872)" in header["message"]
    assert "the config does not describe this checkpoint" in header["message"]
    assert "h.1.attn.c_attn.weight [8, 24]" in header["message"]
    assert budget["field"] == "--max-params"
    assert budget["message"].startswith("1,872 parameters (counted from the safetensors headers")


def test_the_contradiction_fails_without_any_budget(cli: Invoke, tmp_path: Path) -> None:
    folder = edited(gpt2_folder(tmp_path), n_inner=16)
    code, record = report(cli, str(folder))
    assert code == 1
    (finding,) = record["findings"]
    assert "hold 1,872 parameters, the config's formula 1,328 (+544)" in finding["message"]
    assert "shapes it predicts that the headers lack: [8, 16] x2, [16] x2" in finding["message"]


def test_budgets_judge_the_headers_count(cli: Invoke, tmp_path: Path) -> None:
    folder = gpt2_folder(tmp_path)
    assert report(cli, str(folder), "--max-params", "1872")[0] == 0
    code, record = report(cli, str(folder), "--max-params", "1871")
    assert code == 1
    (finding,) = record["findings"]
    assert "1,872 parameters (counted from the safetensors headers of" in finding["message"]
    size = (folder / "model.safetensors").stat().st_size
    fp16 = 2 * elements(folder)
    assert size > fp16  # the file holds its header too: the budget judges the tensors
    assert report(cli, str(folder), "--max-weight-bytes", f"{fp16}B")[0] == 0
    code, record = report(cli, str(folder), "--max-weight-bytes", f"{fp16 - 1}B")
    (finding,) = record["findings"]
    assert f"fp16 weights take {fp16:,} bytes" in finding["message"]
    assert "(the tensor bytes of the safetensors headers of" in finding["message"]
    # measured in another dtype than the headers store, the formula's bytes are judged
    code, record = report(cli, str(folder), "--max-weight-bytes", f"{fp16}B", "--dtype", "fp32")
    (finding,) = record["findings"]
    assert "tensor bytes" not in finding["message"] and code == 1


def test_buffers_transformers_drops_on_load_are_no_contradiction(
    cli: Invoke, tmp_path: Path
) -> None:
    """Old GPT-2 checkpoints hold their causal masks (``attn.bias``), which GPT2's
    ``_keys_to_ignore_on_load_unexpected`` drops; the budget counts what is loaded."""
    folder = gpt2_folder(tmp_path, mask=True)
    assert elements(folder) == 1_872 + 2 * 16
    code, record = report(cli, str(folder), "--max-params", "1872")
    assert code == 0, record
    assert ignored_on_load("gpt2") == ("attn.bias", "crossattention.bias")
    # under another family's name the masks are unexplained tensors
    code, record = report(cli, str(edited(folder, model_type="gpt2", n_layer=2, n_head=4)))
    assert code == 0


def test_a_multimodal_checkpoint_may_hold_more_than_its_text_decoder() -> None:
    """Counted as its text decoder, a model's headers may hold more (the vision tower), never
    less."""
    config = json.loads((FIXTURES / "hf/gpt2.json").read_text())
    model = load_document(Document("config.json", config))
    model = model._replace(notes=("the vision tower is not counted",))
    tensors = [*_tensors_of(model), TensorInfo("vision.weight", "BF16", (3, 3), 9, 18, "f")]
    findings, count = judge_headers(model._replace(checkpoint=_checkpoint(tensors)))
    assert findings == [] and count is not None
    findings, _ = judge_headers(model._replace(checkpoint=_checkpoint(tensors[1:])))
    assert findings and "shapes it predicts that the headers lack" in findings[0].message


def test_a_quantized_checkpoint_is_judged_in_bytes() -> None:
    """Packed elements are no parameter count: the headers' bytes are compared with the
    formula's in the stored format."""
    config = json.loads((FIXTURES / "hf/llama-3.1-8b.json").read_text())
    model = load_document(Document("config.json", config))._replace(weight_format="nf4")
    size = weight_bytes(model.spec, "nf4")
    exact = [TensorInfo("w", "U8", (size,), size, size, "f")]
    findings, count = judge_headers(model._replace(checkpoint=_checkpoint(exact)))
    assert findings == [] and count is not None
    assert (count.parameters, count.bytes, count.dtype) == (None, size, "nf4")
    more = [*exact, TensorInfo("x", "U8", (7,), 7, 7, "f")]
    (finding,) = judge_headers(model._replace(checkpoint=_checkpoint(more)))[0]
    assert f"the config's formula {size:,} as nf4 (+7 unexplained)" in finding.message


def _tensors_of(model: Any) -> list[TensorInfo]:
    from costcalc.tensors import parameter_tensors

    return [
        TensorInfo(f"t{i}.{copy}", "BF16", t.shape, math.prod(t.shape), 2 * math.prod(t.shape), "f")
        for i, t in enumerate(parameter_tensors(model.spec))
        for copy in range(t.copies)
    ]


def _checkpoint(tensors: list[TensorInfo]) -> Checkpoint:
    elements = sum(t.numel for t in tensors)
    size = sum(t.nbytes for t in tensors)
    return Checkpoint("ckpt", tuple(tensors), (), elements, size, size, {}, {})


def test_headers_of_a_layout_costcalc_does_not_size_are_not_judged(
    cli: Invoke, tmp_path: Path
) -> None:
    """A quantization_config costcalc does not size (its elements and bytes are no formula's):
    a warning says the headers are not judged, never a false contradiction."""
    folder = edited(gpt2_folder(tmp_path), n_layer=1, quantization_config={"quant_method": "hqq"})
    code, record = report(cli, str(folder), "--max-params", "1.5k")
    assert code == 0, record
    (warning,) = record["warnings"]
    assert warning["field"] == "quantization_config"
    assert warning["message"].startswith("its headers are not judged against the config")
    assert report(cli, str(folder), "--strict")[0] == 1
