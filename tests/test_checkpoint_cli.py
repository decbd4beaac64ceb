"""A model folder's safetensors headers beside the formula, and checkpoints with no formula.

The files are written by the safetensors library itself; the expected totals are numpy's sizes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from typer.testing import Result

from costcalc.loaders import load_file
from costcalc.params import total_params

Invoke = Callable[..., Result]
ROOT = Path(__file__).resolve().parent.parent
GPT2 = {"n_embd": 8, "n_layer": 2, "n_head": 2, "vocab_size": 10, "n_positions": 4}
BLOCK = {
    "ln_1.weight": (8,), "ln_1.bias": (8,), "attn.c_attn.weight": (8, 24),
    "attn.c_attn.bias": (24,), "attn.c_proj.weight": (8, 8), "attn.c_proj.bias": (8,),
    "ln_2.weight": (8,), "ln_2.bias": (8,), "mlp.c_fc.weight": (8, 32), "mlp.c_fc.bias": (32,),
    "mlp.c_proj.weight": (32, 8), "mlp.c_proj.bias": (8,),
}  # fmt: skip


def gpt2_folder(tmp_path: Path, model_type: str = "gpt2", mask: bool = False) -> Path:
    """A tiny GPT-2 saved as transformers lays it out (Conv1D stores (in, out)); ``mask`` adds
    the causal-mask buffers old GPT-2 checkpoints carry (``attn.bias``, 1 x 1 x 4 x 4)."""
    config = json.loads((ROOT / "tests/fixtures/hf/gpt2.json").read_text())
    config.update(GPT2, model_type=model_type)
    if model_type != "gpt2":  # a class no family costcalc reads (GPT2LMHeadModel would be read)
        config["architectures"] = ["SomeNewFamilyForCausalLM"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    tensors = {"wte.weight": (10, 8), "wpe.weight": (4, 8), "ln_f.weight": (8,), "ln_f.bias": (8,)}
    for i in range(2):
        tensors.update({f"h.{i}.{name}": shape for name, shape in BLOCK.items()})
        if mask:
            tensors[f"h.{i}.attn.bias"] = (1, 1, 4, 4)
    arrays = {name: np.zeros(shape, np.float16) for name, shape in tensors.items()}
    save_file(arrays, str(tmp_path / "model.safetensors"))
    return tmp_path


def elements(folder: Path) -> int:
    from safetensors.numpy import load_file as load_arrays

    return sum(a.size for a in load_arrays(str(folder / "model.safetensors")).values())


def test_a_folder_shows_header_and_formula_alike(cli: Invoke, tmp_path: Path) -> None:
    folder = gpt2_folder(tmp_path)
    result = cli("params", "-c", str(folder), "-f", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    header = data["checkpoint"]
    assert header["parameters_total"] == elements(folder) == data["parameters"]["total"]
    assert header["bytes_by_dtype"] == {"F16": 2 * elements(folder)}
    assert header["formula"] == {
        "parameters_total": total_params(load_file(folder).spec),
        "equal": True,
        "difference": 0,
        "unexplained": [],
    }


def test_a_difference_names_the_tensors_the_formula_does_not_explain(
    cli: Invoke, tmp_path: Path
) -> None:
    folder = gpt2_folder(tmp_path, mask=True)
    data = json.loads(cli("params", "-c", str(folder), "-f", "json").stdout)
    assert data["checkpoint"]["formula"]["difference"] == 2 * 16
    assert data["checkpoint"]["formula"]["unexplained"] == ["h.0.attn.bias", "h.1.attn.bias"]
    table = cli("params", "-c", str(folder)).stdout
    assert "h.0.attn.bias, h.1.attn.bias" in table and "+32" in table


@pytest.mark.parametrize("target", ["folder", "model.safetensors"])
def test_a_family_without_formula_is_counted_from_its_headers(
    cli: Invoke, tmp_path: Path, target: str
) -> None:
    folder = gpt2_folder(tmp_path, model_type="some_new_family")
    path = folder if target == "folder" else folder / "model.safetensors"
    result = cli("params", "-c", str(path), "-f", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["format"] == "safetensors"
    assert data["checkpoint"]["parameters_total"] == elements(folder)
    assert "formula" not in data["checkpoint"]


def test_commands_that_need_a_formula_say_so(cli: Invoke, tmp_path: Path) -> None:
    folder = gpt2_folder(tmp_path, model_type="some_new_family")
    result = cli("memory", "-c", str(folder / "model.safetensors"))
    assert result.exit_code == 2
    assert "no formula" in result.stderr and "Traceback" not in result.stderr


def test_overrides_drop_the_checkpoint(cli: Invoke, tmp_path: Path) -> None:
    # A changed model is no longer the one on disk: no header comparison.
    data = json.loads(
        cli("params", "-c", str(gpt2_folder(tmp_path)), "--d", "16", "-f", "json").stdout
    )
    assert "checkpoint" not in data
