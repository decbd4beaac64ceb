"""Start-up does only what the command needs: one subcommand built, no checkpoint code for a
preset, no second schema for a loaded model, no layer-group or mixer-size model for a model
without layers or recurrent mixers; and what it skips changes no output."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from costcalc.blocks import RECURRENT_MIXERS
from costcalc.errors import CostcalcError
from costcalc.files import parse_document
from costcalc.loaders import _load_native, load_file, load_preset
from costcalc.presets import preset_names, preset_text
from costcalc.spec import ModelSpec, trusted_spec
from tests.conftest import FIXTURES

FILLED = {"n_kv_heads", "head_dim", "ffn_hidden", "embedding_dim", "norm_bias", "rotary_dim"}


def _run_fresh(args: list[str], after: str) -> tuple[dict[str, object], str]:
    """The JSON ``costcalc ARGS`` prints, and the expression ``after`` evaluated once it has
    run, as text, in a fresh process."""
    code = (
        "import sys\n"
        "from costcalc.cli.app import app\n"
        "try:\n"
        f"    app({args!r}, prog_name='costcalc')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"sys.stderr.write(str({after}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout), done.stderr


def _modules_after(*args: str) -> tuple[dict[str, object], set[str]]:
    """The JSON ``costcalc ARGS`` prints and the modules it imported, in a fresh process."""
    data, modules = _run_fresh(list(args), "' '.join(sys.modules)")
    return data, set(modules.split())


def test_params_json_imports_only_what_it_uses() -> None:
    data, modules = _modules_after("params", "-p", "gpt2-small", "-f", "json")
    assert data["parameters"]["total"] == 124_439_808
    others = {f"costcalc.cli.{name}" for name in ("memory", "check", "lora", "scale", "heads")}
    unused = {
        "costcalc.checkpoint",
        "costcalc.checkpoint_report",
        "costcalc.hub",
        "huggingface_hub",
        "costcalc.formats.families",
        "rich.table",
        "costcalc.config",
        "costcalc.files",
        "costcalc.compute",
        "costcalc.macs",
        "costcalc.memory",
        *(f"costcalc.anatomy.{kind}" for kind in RECURRENT_MIXERS),
    }
    assert not (others | unused) & modules


def test_the_api_reads_a_config_mapping_with_only_its_own_reader() -> None:
    """A Hugging Face ``config.json`` mapping counted, its MACs and its memory through the
    Python API: neither the native format's models (costcalc.config), nor nanoGPT's reader,
    nor the plan are imported; validating it builds no layer-group model and no recurrent
    mixer's sizes."""
    code = (
        "import json, sys\n"
        "import costcalc\n"
        f"config = json.loads(open({str(FIXTURES / 'hf/llama-3.1-8b.json')!r}).read())\n"
        "total = costcalc.count(config).parameters.total\n"
        "costcalc.count_macs(config, length=8)\n"
        "costcalc.count_memory(config, length=8)\n"
        "groups = sys.modules['costcalc.spec'].layer_models.cache_info().currsize\n"
        "print(total, groups, ' '.join(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    total, groups, *modules = done.stdout.split()
    assert int(total) == 8_030_261_248
    assert groups == "0"
    mixers = {f"costcalc.anatomy.{kind}" for kind in RECURRENT_MIXERS}
    assert not {"costcalc.config", "costcalc.formats.nanogpt", "costcalc.plan"} & set(modules)
    assert not mixers & set(modules)


def _errors(model: type[BaseModel], data: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """pydantic's errors validating ``data`` with ``model``, those under ``field``."""
    with pytest.raises(ValidationError) as raised:
        model.model_validate(data)
    return [e for e in raised.value.errors(include_url=False) if e["loc"][0] == field]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mamba2", 5),
        ("mamba2", {"heads": 0, "head_dim": 2.0, "state": True, "stray": 1}),
        ("mamba2", {}),
        ("short_conv", "wide"),
        ("layers", [{"count": 0, "stray": 1}, 5, {"count": 2, "mamba2": {"heads": -1}}]),
        ("layers", [{"count": 1, "pattern": [{"count": 1, "n_heads": 0}]}]),
        ("layers", "all"),
    ],
)
def test_a_field_built_on_first_use_errs_as_a_nested_model(field: str, value: Any) -> None:
    """The layer groups and the mixers' sizes are validated by their own models, built on
    first use (costcalc.blocks.Deferred): the errors are those of the same models nested as
    pydantic nests them, item for item."""
    from costcalc.anatomy.mamba2 import Mamba2Sizes
    from costcalc.anatomy.short_conv import ShortConvSizes
    from costcalc.spec import layer_models

    class Nested(BaseModel):
        mamba2: Mamba2Sizes | None = None
        short_conv: ShortConvSizes | None = None
        layers: tuple[layer_models()[1], ...] | None = Field(  # type: ignore[valid-type]
            default=None, min_length=1
        )

    expected = _errors(Nested, {field: value}, field)
    assert expected  # each value is wrong
    assert _errors(ModelSpec, {field: value}, field) == expected


@pytest.mark.parametrize(("preset", "built"), [("gpt2-small", "0"), ("gemma-3-1b", "1")])
def test_layer_group_models_are_built_only_for_layers(preset: str, built: str) -> None:
    """Copying the block fields into the layer-group models is paid by a model with layers."""
    after = "sys.modules['costcalc.spec'].layer_models.cache_info().currsize"
    data, currsize = _run_fresh(["params", "-p", preset, "-f", "json"], after)
    assert data["name"] == preset
    assert currsize == built


def _specs() -> list[tuple[str, object]]:
    specs = [(name, load_preset(name).spec) for name in preset_names()]
    for path in sorted((FIXTURES / "hf").glob("*.json")):
        try:
            specs.append((path.stem, load_file(path).spec))
        except CostcalcError:
            continue  # a family costcalc does not read
    return specs


@pytest.mark.parametrize(("name", "spec"), _specs(), ids=lambda value: str(value)[:40])
def test_resolved_reads_every_field_as_model_dump_does(name: str, spec: object) -> None:
    from costcalc.spec import ModelSpec

    assert isinstance(spec, ModelSpec)
    dumped = spec.model_dump(exclude_none=False)
    resolved = spec.resolved()
    dropped = {"ffn_mult"} | ({"layers"} if spec.layers is None else set())
    assert set(resolved) == set(dumped) - dropped
    assert {k: v for k, v in resolved.items() if k not in FILLED} == {
        k: v for k, v in dumped.items() if k not in FILLED | dropped
    }


def _same(built: object, validated: object) -> None:
    """Equal, and made of the same classes all the way down (pydantic's == compares fields)."""
    assert type(built) is type(validated)
    assert built == validated
    if isinstance(built, tuple) and isinstance(validated, tuple):
        for mine, theirs in zip(built, validated, strict=True):
            _same(mine, theirs)
    elif isinstance(built, BaseModel):
        for name in type(built).model_fields:
            _same(getattr(built, name), getattr(validated, name))


@pytest.mark.parametrize("name", preset_names())
def test_preset_validates_and_loads_as_validation_builds_it(name: str) -> None:
    """A preset without overrides is built without validating: every preset must validate and
    come out the same as validation builds it."""
    validated = _load_native(parse_document(preset_text(name), f"preset {name}"), name, {})
    built = load_preset(name)
    assert built == validated
    _same(built.spec, validated.spec)


@pytest.mark.parametrize(("name", "spec"), _specs(), ids=lambda value: str(value)[:40])
def test_trusted_spec_builds_nested_models_as_validation_does(name: str, spec: object) -> None:
    """Layer groups, patterns and recurrent mixer sizes (Hugging Face families) included."""
    assert isinstance(spec, ModelSpec)
    _same(trusted_spec(spec.model_dump()), ModelSpec.model_validate(spec.model_dump()))


def test_absent_options_are_not_converted() -> None:
    """typer builds a pydantic TypeAdapter for each option value it converts; an option not
    given keeps its default unconverted, so a run converts only what it was given."""
    code = (
        "import sys, typer.core\n"
        "seen = []\n"
        "build = typer.core._TyperParameter.get_runtime_param\n"
        "def counted(self):\n"
        "    seen.append(self.name)\n"
        "    return build(self)\n"
        "typer.core._TyperParameter.get_runtime_param = counted\n"
        "from costcalc.cli.app import app\n"
        "try:\n"
        "    app(['params', '-p', 'gpt2-small', '-f', 'json'], prog_name='costcalc')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(' '.join(sorted(set(seen))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["parameters"]["total"] == 124_439_808
    assert done.stderr.split() == ["fmt", "help", "preset"]  # help: an option with a callback


@pytest.mark.parametrize(
    ("option", "value"), [("--batch", "abc"), ("--vocab", "1.5"), ("--format", "jsn")]
)
def test_given_options_are_still_checked(option: str, value: str) -> None:
    from typer.testing import CliRunner

    from costcalc.cli.app import app

    result = CliRunner().invoke(app, ["params", "-p", "gpt2-small", option, value])
    assert result.exit_code == 2
    assert "Invalid value" in result.output or result.output.startswith(f"error: {option}: ")
