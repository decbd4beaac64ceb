"""Every Hugging Face fixture, its values broken at every depth: only costcalc's errors come out.

Each fixture in tests/fixtures/hf is mutated at key paths anywhere in it (``text_config``,
``thinker_config``, ``layer_types``, ``cross_attention_layers``, ``rope_parameters`` and their
items as much as the top level): a value of the wrong type (text, float, bool, null, list,
mapping), a negative, zero, huge or non-finite number, a list emptied, shortened, lengthened or
holding the wrong items, a key removed. Each mutated file goes the way of ``costcalc check FILE``
and of ``costcalc params --config FILE -f json`` with a forward and a decoding workload; it must
give a result or a CostcalcError, nothing else, and within a bound of CPU time and memory. The
largest size a config may hold (2^31 - 1) at every whole-number key shows that no work grows with
a stated size (layers, experts, windows, ranks, streams). A fixed seed and a few cases per
fixture keep the run short and the same in every run.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costcalc.check import FAULT, Limits, check_file
from costcalc.compute import Workload
from costcalc.errors import ConfigError, CostcalcError
from costcalc.files import Document
from costcalc.loaders import LoadedModel, load_document
from costcalc.results import params_result
from costcalc.scalars import MAX_SIZE
from tests.conftest import FIXTURES, Invoke

HF = sorted(FIXTURES.joinpath("hf").glob("*.json"))
FORWARD = Workload(batch=1, length=64)
BOTH = Workload(batch=1, length=64, prompt=16, generated=4)
CPU_SECONDS = 2.0
"""The CPU time one mutated file may take to be checked and counted (about 10 ms is usual)."""
PEAK_BYTES = 64 * 2**20
"""The memory one mutated file may take on top of what was held before it."""

Path_ = tuple[str | int, ...]


class _Change:
    """A mutation relative to the value it replaces."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


REMOVED, EMPTIED, SHORTER, LONGER, RETYPED = map(
    _Change, ["REMOVED", "EMPTIED", "SHORTER", "LONGER", "RETYPED"]
)
VALUES = st.sampled_from(
    [
        REMOVED,
        EMPTIED,
        SHORTER,
        LONGER,
        RETYPED,
        None,
        True,
        False,
        0,
        -1,
        1,
        2,
        3,
        MAX_SIZE,
        MAX_SIZE + 1,
        10**30,
        -(10**30),
        0.5,
        1.5,
        1e300,
        math.nan,
        math.inf,
        "",
        "x",
        "auto",
        "full_attention",
        [],
        [0],
        [None],
        [1.5, "x"],
        [[1]],
        {},
        {"a": 1},
        {"type": None},
    ]
) | st.one_of(
    st.integers(),
    st.floats(),
    st.text(max_size=6),
    st.lists(st.integers(-3, 200) | st.booleans() | st.text(max_size=3), max_size=5),
)


def key_paths(data: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every key path of ``data``: each key of each mapping and each item of each list."""
    items: Iterable[tuple[str | int, Any]] = ()
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list):
        items = enumerate(data)
    for key, value in items:
        yield (*prefix, key)
        yield from key_paths(value, (*prefix, key))


def mutated(data: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``value`` at ``path`` (or the change it names made there)."""
    data = copy.deepcopy(data)
    parent: Any = data
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    old = parent[key]
    if value is REMOVED:
        del parent[key]
        return data
    if value is EMPTIED:
        value = type(old)() if isinstance(old, list | dict | str) else None
    elif value is SHORTER:
        value = old[: len(old) // 2] if isinstance(old, list | str) else 0
    elif value is LONGER:
        value = old * 3 if isinstance(old, list | str) else old * 1000 if _is_int(old) else old
    elif value is RETYPED:
        value = str(old) if not isinstance(old, list) else [str(item) for item in old]
    parent[key] = value
    return data


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked(path: Path, data: dict[str, Any]) -> None:
    """``data`` written to ``path`` is checked and counted as `check` and `params` do it, and
    when it holds NaN or an infinity also loaded as a mapping (as the Python API takes one);
    only CostcalcError may come out, and within the bounds."""
    text = json.dumps(data)
    path.write_text(text, encoding="utf-8")
    tracemalloc.start()
    start = time.process_time()
    try:
        report = check_file(path, Limits())
        assert report.ok == (report.model is not None and not report.findings)
        for finding in report.findings:
            assert finding.message and not finding.message.startswith(FAULT), finding
        if report.model is not None:
            _counted(report.model)
        if "NaN" in text or "Infinity" in text:
            try:
                load_document(Document(str(path), data))
            except CostcalcError as exc:
                assert str(exc)
        elapsed = time.process_time() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < CPU_SECONDS, f"{elapsed:.2f} s of CPU time"
    assert peak < PEAK_BYTES, f"{peak:,} bytes at the peak"


def _counted(model: LoadedModel) -> None:
    """What `params --config FILE -f json` computes with a forward and a decoding workload (the
    forward alone where decoding is refused, as for recurrent mixers)."""
    for workload in (BOTH, FORWARD):
        try:
            json.dumps(params_result(model, workload).to_dict())
            return
        except CostcalcError as exc:
            assert str(exc)


MUTATE = settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("fixture", HF, ids=lambda path: path.stem)
@MUTATE
@given(data=st.data())
def test_mutated_fixture(fixture: Path, data: st.DataObject, tmp_path: Path) -> None:
    """One to three values of ``fixture`` replaced at key paths anywhere in it."""
    config = json.loads(fixture.read_text(encoding="utf-8"))
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        paths = list(key_paths(config))
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        config = mutated(config, path, data.draw(VALUES, label="value"))
    checked(tmp_path / "config.json", config)


LAYER_COUNTS = frozenset({"num_hidden_layers", "n_layer", "num_layers", "n_layers"})
SIZES_PER_FIXTURE = 1
"""Whole numbers set to the largest size in each fixture besides its layer counts, chosen by
the fixture's name (so fixtures of one family try different keys)."""


@pytest.mark.parametrize("fixture", HF, ids=lambda path: path.stem)
def test_largest_sizes_cost_no_more(fixture: Path, tmp_path: Path) -> None:
    """Whole numbers of the fixture above 1 set to the largest size a config may hold, one key
    at a time: every layer count and a spread of the others. A result or an error, within the
    same bounds. (Every whole number of every fixture passes too; a sample keeps CI short.)"""
    config = json.loads(fixture.read_text(encoding="utf-8"))
    sizes = [p for p in key_paths(config) if _is_int(v := _at(config, p)) and v > 1]
    layers = [p for p in sizes if p[-1] in LAYER_COUNTS]
    others = [p for p in sizes if p[-1] not in LAYER_COUNTS]
    start = zlib.crc32(fixture.name.encode())
    spread = range(0, SIZES_PER_FIXTURE * 7919, 7919) if others else ()
    chosen = sorted({others[(start + i) % len(others)] for i in spread}, key=str)
    for path in [*layers, *chosen]:
        checked(tmp_path / "config.json", mutated(config, path, MAX_SIZE))


def _at(data: Any, path: Path_) -> Any:
    for key in path:
        data = data[key]
    return data


# Each input the mutations above crashed on (a Python error, or work that grew with a size),
# with the finding it gives now.
REFUSED: list[tuple[str, Path_, Any, str, str]] = [
    ("bamba-9b", ("mamba_expand",), math.nan, "mamba_expand", "NaN is not a finite number"),
    ("bamba-9b", ("mamba_expand",), math.inf, "mamba_expand", "Infinity is not a finite"),
    ("bamba-9b", ("mamba_expand",), 1e308, "mamba_expand", "at most 2,147,483,647"),
    ("tiny-zamba2", ("mamba_expand",), math.nan, "mamba_expand", "NaN is not a finite"),
    ("falcon-mamba-7b", ("expand",), math.inf, "expand", "Infinity is not a finite"),
    ("falcon-mamba-7b", ("expand",), "2", "expand", "expected a number above 0"),
    (
        "gpt-neox-japanese-2.7b",
        ("intermediate_multiple_size",),
        1e308,
        "intermediate_multiple_size",
        "expected a number above 0",
    ),
    ("lfm2-1.2b", ("block_ffn_dim_multiplier",), "x", "block_ffn_dim_multiplier", "above 0"),
    ("lfm2-1.2b", ("block_ffn_dim_multiplier",), [1], "block_ffn_dim_multiplier", "above 0"),
    ("lfm2-1.2b", ("block_ff_dim",), 10**400, "block_ff_dim", "less than or equal to"),
    ("deepseek-v4-flash", ("compress_ratios", 0), [], "compress_ratios", "0, 4 or 128"),
    ("deepseek-v4-flash", ("compress_ratios", 0), False, "compress_ratios", "0, 4 or 128"),
    ("recurrentgemma-2b", ("block_types", 0), [], "block_types", "'recurrent' and 'attention'"),
    (
        "zamba-7b-v1",
        ("hidden_act",),
        ["gelu"],
        "hidden_act",
        "is not an activation transformers has",
    ),
    ("zamba-7b-v1", ("mamba_expand",), 1.5, "mamba_expand", "expected a whole number"),
    ("jamba-v0.1", ("mamba_expand",), "2", "mamba_expand", "expected a whole number"),
    ("zamba-7b-v1", ("attn_layer_offset",), "4", "attn_layer_offset", "0 or more"),
    ("dory-last-loop", ("num_hidden_layers",), MAX_SIZE, "num_hidden_layers", "at most 65,536"),
    (
        "kimi-linear-48b-a3b",
        ("num_hidden_layers",),
        MAX_SIZE,
        "linear_attn_config.full_attn_layers",
        "at most 65,536 layers",
    ),
]


@pytest.mark.parametrize(("fixture", "path", "value", "field", "message"), REFUSED)
def test_crashing_inputs_are_findings(
    fixture: str, path: Path_, value: Any, field: str, message: str, tmp_path: Path
) -> None:
    source = FIXTURES / "hf" / f"{fixture}.json"
    data = mutated(json.loads(source.read_text(encoding="utf-8")), path, value)
    with pytest.raises(ConfigError) as caught:
        load_document(Document(str(source), data))
    assert any(p.field == field and message in p.message for p in caught.value.problems), (
        caught.value.problems
    )
    checked(tmp_path / "config.json", data)


def test_a_layered_model_that_fails_hears_of_no_rule_its_groups_override() -> None:
    """Bamba's attention sizes sit in its attention layers: a bad Mamba size is the one
    finding, without a rule about heads on the model's own (overridden) block keys."""
    source = FIXTURES / "hf" / "bamba-9b.json"
    data = mutated(json.loads(source.read_text(encoding="utf-8")), ("mamba_d_state",), 0)
    with pytest.raises(ConfigError) as caught:
        load_document(Document(str(source), data))
    assert {p.message for p in caught.value.problems} == {
        "Input should be greater than or equal to 1 (got 0)"
    }


@pytest.mark.parametrize("fixture", ["mellum2-12b-a2.5b", "zamba-7b-v1"])
@pytest.mark.parametrize("layers", [65_536, MAX_SIZE])
def test_layer_count_at_any_size_is_read_in_closed_form(
    fixture: str, layers: int, tmp_path: Path
) -> None:
    """Layer kinds the file does not list (Mellum's, one kind; Zamba's, by its rule) are a few
    groups whatever the count, so checking and counting take the same time at any size."""
    source = FIXTURES / "hf" / f"{fixture}.json"
    data = mutated(json.loads(source.read_text(encoding="utf-8")), ("num_hidden_layers",), layers)
    model = load_document(Document(str(source), data))
    assert model.spec.n_layers == layers
    assert len(model.spec.layers or ()) <= 4
    checked(tmp_path / "config.json", data)


def test_check_a_directory_of_good_and_bad_files(tmp_path: Path) -> None:
    """`costcalc check DIR` (the installed command, in a process of its own) reports every bad
    file with its field, line and what was expected, passes every good one and exits 1; a
    directory of good files alone exits 0."""
    good, bad = tmp_path / "good", tmp_path / "mixed"
    good.mkdir()
    bad.mkdir()
    for fixture in HF[::5]:
        good.joinpath(fixture.name).write_bytes(fixture.read_bytes())
    bad_files: dict[str, tuple[str, str]] = {}
    for index, (fixture, path, value, field, message) in enumerate(REFUSED):
        if value == 10**400:
            continue  # a file cannot hold it (tests/test_hostile.py: refused as it is read)
        data = json.loads((FIXTURES / "hf" / f"{fixture}.json").read_text(encoding="utf-8"))
        name = f"bad-{index:02}-{fixture}.json"
        bad_files[name] = (field, message)
        (bad / name).write_text(json.dumps(mutated(data, path, value), indent=1), "utf-8")
    layered = "vocab_size: 256\ncontext_length: 64\nd_model: 64\nn_layers: 2\nn_heads: 4\n"
    bad.joinpath("bad-group.yaml").write_text(
        layered + "layers:\n  - count: 2\n    qkv_bias: 1\n", encoding="utf-8"
    )
    bad_files["bad-group.yaml"] = ("layers.0.qkv_bias", "valid boolean")
    bad.joinpath("bad-syntax.json").write_text('{"model_type": "llama",', encoding="utf-8")
    bad_files["bad-syntax.json"] = ("", "malformed JSON")
    for fixture in HF[::20]:
        bad.joinpath(fixture.name).write_bytes(fixture.read_bytes())

    def check(directory: Path) -> tuple[int, dict[str, dict[str, Any]]]:
        run = subprocess.run(
            [sys.executable, "-m", "costcalc", "check", str(directory), "-f", "json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert "Traceback" not in run.stderr, run.stderr
        return run.returncode, {Path(r["path"]).name: r for r in json.loads(run.stdout)}

    code, records = check(bad)
    assert code == 1
    assert set(records) == {p.name for p in bad.iterdir()}
    for name, record in records.items():
        if name not in bad_files:
            assert record["ok"], record
            continue
        field, message = bad_files[name]
        assert not record["ok"]
        assert any(
            (f["field"] or "") == field and message in f["message"] and f["line"] is not None
            for f in record["findings"]
        ), record
    code, records = check(good)
    assert code == 0
    assert all(record["ok"] for record in records.values())
    assert len(records) == len(HF[::5])


def test_a_file_costcalc_fails_on_fails_alone(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should costcalc itself fail on a file (an error that is no CostcalcError), that file is
    a finding naming the error, and the files after it are still checked (exit 1)."""
    import costcalc.check

    load = costcalc.check.load_document

    def failing(doc: Document) -> LoadedModel:
        if doc.path.endswith("a.json"):
            raise TypeError("unhashable type: 'list'")
        return load(doc)

    monkeypatch.setattr(costcalc.check, "load_document", failing)
    source = (FIXTURES / "hf" / "tiny-zamba.json").read_bytes()
    for name in ("a.json", "b.json"):
        tmp_path.joinpath(name).write_bytes(source)
    result = cli("check", str(tmp_path), "-f", "json")
    assert result.exit_code == 1
    first, second = json.loads(result.stdout)
    assert first["findings"] == [
        {"field": None, "line": None, "message": f"{FAULT}: TypeError: unhashable type: 'list'"}
    ]
    assert second["ok"]
