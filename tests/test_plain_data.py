"""Results and errors are plain data: they pickle and deep-copy as they are, so a sweep over a
process pool returns every result and every error (one bad config never breaks the pool)."""

from __future__ import annotations

import copy
import importlib
import json
import pickle
import pkgutil
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest

import costcalc
from costcalc.check import Limits, check_paths
from costcalc.errors import (
    CheckpointError,
    ConfigError,
    CostcalcError,
    FileReadError,
    HubError,
    OutputError,
    Problem,
    RangeError,
    UnknownPresetError,
    UnsupportedModelError,
    UsageError,
)
from costcalc.frozen import FrozenMap
from tests.conftest import FIXTURES, ROOT
from tests.test_checkpoint_cli import gpt2_folder

HEADS_7 = "vocab_size: 512\ncontext_length: 256\nd_model: 128\nn_layers: 2\nn_heads: 7\n"


def same(copied: Any, original: Any) -> None:
    assert type(copied) is type(original)
    assert copied == original
    if hasattr(original, "to_dict"):
        assert json.dumps(copied.to_dict()) == json.dumps(original.to_dict())


def crosses(value: Any) -> None:
    """``value`` comes back equal from pickling (every protocol) and from a deep copy."""
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        same(pickle.loads(pickle.dumps(value, protocol)), value)
    same(copy.deepcopy(value), value)


def folder(top: Path) -> str:
    top.mkdir()
    return str(gpt2_folder(top))


def test_results_pickle_and_deep_copy(tmp_path: Path) -> None:
    hf = str(FIXTURES / "hf" / "gpt2.json")
    model_folder = folder(tmp_path / "model")
    loaded = [costcalc.load("gpt2-small"), costcalc.load(hf), costcalc.load(model_folder)]
    assert loaded[2].checkpoint is not None and loaded[1].key_names
    results: list[Any] = [
        *loaded,
        costcalc.count("gpt2-small"),
        costcalc.count(model_folder),
        costcalc.count_macs("qwen3-30b-a3b", length=512, causal=True),
        costcalc.count_macs("llama-3.1-8b", prompt=128, generate=16),
        costcalc.count_memory("gpt2-small", length=1024, fits="1GiB"),
        costcalc.count_memory("llama-3.1-8b", train=True, length=512, gpus=8, zero=3),
        costcalc.count_memory("llama-3.1-8b", train=True, length=512, gpus=8, tp=2, pp=2),
        costcalc.count_lora("llama-3.1-8b", targets=["q_proj", "v_proj"], train=True, length=256),
        *check_paths([str(ROOT / "presets" / "gpt2-small.yaml"), model_folder], Limits()),
    ]
    for result in results:
        crosses(result)


def test_a_frozen_map_is_read_only_and_compares_as_a_dict() -> None:
    frozen = FrozenMap({"a": 1, "b": 2})
    assert frozen == {"a": 1, "b": 2} and dict(frozen) == {"a": 1, "b": 2}
    assert list(frozen) == ["a", "b"] and len(frozen) == 2 and frozen["b"] == 2
    with pytest.raises(TypeError):
        frozen["a"] = 3  # type: ignore[index]
    crosses(frozen)


def every_error_class() -> set[type[CostcalcError]]:
    """CostcalcError and every subclass of it in costcalc's modules."""
    for module in pkgutil.walk_packages(costcalc.__path__, "costcalc."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: set[type[CostcalcError]] = set()
    stack: list[type[CostcalcError]] = [CostcalcError]
    while stack:
        cls = stack.pop()
        found.add(cls)
        stack += cls.__subclasses__()
    return found


ERRORS: list[CostcalcError] = [
    CostcalcError("a message"),
    ConfigError("a.yaml", [Problem("n_heads", "d_model 128 does not split", 5, 3)]),
    UnsupportedModelError("b.json", [Problem("model_type", "no formula")]),
    FileReadError("c.yaml", "malformed YAML", 2, 7),
    UnknownPresetError("gtp2", ["gpt2", "gpt2-xl"], "gpt2"),
    UsageError("--key '' is not a path of keys"),
    HubError("org/model", "not in the cache and the Hub is offline"),
    OutputError("No space left on device"),
    RangeError("length", 0, "at least 1"),
    CheckpointError("model.safetensors", "header runs past the end of the file"),
]


def test_every_error_survives_pickling() -> None:
    from costcalc.gpus import CatalogueError

    errors = [*ERRORS, CatalogueError("an entry without memory")]
    assert {type(error) for error in errors} == every_error_class()
    for error in errors:
        for copied in [pickle.loads(pickle.dumps(error)), copy.deepcopy(error)]:
            assert type(copied) is type(error)
            assert str(copied) == str(error) and copied.args == error.args
            assert vars(copied) == vars(error)


def outcome(source: str) -> Any:
    """What ``costcalc.count(source)`` returns or raises, in this process."""
    try:
        return costcalc.count(source).to_dict()
    except CostcalcError as exc:
        return exc


def test_a_process_pool_returns_every_result_and_every_error(tmp_path: Path) -> None:
    good = [
        "gpt2-small",
        "qwen3-30b-a3b",
        str(ROOT / "presets" / "llama-3.1-8b.yaml"),
        str(FIXTURES / "hf" / "gpt2.json"),
        folder(tmp_path / "model"),
    ]
    (tmp_path / "heads.yaml").write_text(HEADS_7)
    (tmp_path / "broken.yaml").write_text("d_model: [128\n")
    damaged = folder(tmp_path / "damaged")
    data = (Path(damaged) / "model.safetensors").read_bytes()
    (Path(damaged) / "model.safetensors").write_bytes(data[:-2])
    bad = [str(tmp_path / "heads.yaml"), str(tmp_path / "broken.yaml"), "gtp2", damaged]
    sources = [source for pair in zip(good, [*bad, None], strict=True) for source in pair if source]

    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(costcalc.count, source) for source in sources]
        done = [(future.exception(), future) for future in futures]

    kinds = []
    for source, (error, future) in zip(sources, done, strict=True):
        expected = outcome(source)
        if source in good:
            assert error is None, (source, error)
            assert future.result().to_dict() == expected
        else:
            assert type(error) is type(expected) and str(error) == str(expected)
            assert vars(error) == vars(expected)
            kinds.append(type(error))
    assert kinds == [ConfigError, FileReadError, UnknownPresetError, CheckpointError]
