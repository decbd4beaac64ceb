"""`costcalc schema` and `costcalc check` agree on every single-field rule.

Each case puts one value into a valid config and runs it through both costcalc and a JSON Schema
validator (the `jsonschema` library, reading the YAML as YAML 1.2 does, as editors and
check-jsonschema do); the two verdicts must be the same, and the expected one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from costcalc.config import config_schema
from tests.conftest import Invoke

BASE = "vocab_size: 100\ncontext_length: 64\nd_model: 64\nn_layers: 2\nn_heads: 4\n"
"""A valid model of about 100k parameters, so that no budget case is over its limit."""


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML with YAML 1.2's booleans (true and false only; yes, no, on, off are text), floats
    (``1e12`` and ``3.0e7`` are numbers, not text) and integers (the core schema's decimal,
    ``0o`` octal and ``0x`` hexadecimal: ``0400`` is 400, ``0o400`` 256, and ``1_000``,
    ``0b100`` and ``1:04`` are text)."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:int"]
    for first, resolvers in Yaml12Loader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
Yaml12Loader.add_constructor(
    "tag:yaml.org,2002:int",
    lambda loader, node: int(
        node.value[2:] if node.value[:2] in ("0o", "0x") else node.value,
        {"0o": 8, "0x": 16}.get(node.value[:2], 10),
    ),
)
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"),
    list("-+0123456789."),
)

# (YAML line put into BASE (a key already there is replaced), accepted by both)
CASES: list[tuple[str, bool]] = [
    # sizes: strict positive integers
    ("d_model: 64", True),
    ("d_model: 0", False),
    ("d_model: -64", False),
    ("d_model: 64.0", False),
    ("d_model: 6.4e1", False),
    ("d_model: 64.5", False),
    ('d_model: "64"', False),
    ("d_model: true", False),
    ("d_model: null", False),
    ("n_layers: 2147483648", False),
    ("n_layers: 2.0", False),
    ("ffn_hidden: 256", True),
    ("ffn_hidden: 256.0", False),
    # booleans: YAML 1.2's true and false only
    ("tie_embeddings: true", True),
    ("tie_embeddings: false", True),
    ("tie_embeddings: True", True),
    ("tie_embeddings: FALSE", True),
    ("tie_embeddings: yes", False),
    ("tie_embeddings: no", False),
    ("tie_embeddings: on", False),
    ("tie_embeddings: off", False),
    ("tie_embeddings: Yes", False),
    ('tie_embeddings: "true"', False),
    ("tie_embeddings: 1", False),
    ("tie_embeddings: 0", False),
    ("qkv_bias: y", False),
    # choices
    ("norm: rmsnorm", True),
    ("norm: RMSNorm", False),
    ("ffn: swiglu", True),
    ("ffn: relu", False),
    ("position: rotary", True),
    ("position: alibi", False),
    # block keys of a mixture of attention heads and of a mixture's output bias
    ("attention_experts: 2", True),
    ("attention_experts: 0", False),
    ("attention_experts: 2.0", False),
    ("moe_output_bias: 1", False),
    ("mixer: lightning\nlightning: {heads: 4, head_dim: 16}", True),
    ("mixer: lightning\nlightning: {heads: 4, head_dim: 16, block_size: 0}", False),
    ("mixer: lightning\nlightning: {heads: 4, head_dim: 16.0}", False),
    ("mixer: lightning\nlightning: {heads: 4}", False),
    ("mixer: rwkv\nrwkv: {attention_width: 64}", True),
    ("mixer: rwkv\nrwkv: {attention_width: 64}\nffn: channel_mix\nffn_bias: false", True),
    ("mixer: rwkv\nrwkv: {attention_width: 0}", False),
    ("mixer: rwkv\nrwkv: {attention_width: 64.0}", False),
    ("mixer: rwkv\nrwkv: {}", False),
    ("mixer: rwkv\nrwkv: {attention_width: 64, heads: 4}", False),
    ("mixer: mlstm\nmlstm: {heads: 4, qk_width: 32, v_width: 64}", True),
    ("mixer: mlstm\nmlstm: {heads: 4, qk_width: 32, v_width: 64, fused: true}", True),
    ("mixer: mlstm\nmlstm: {heads: 4, qk_width: 32, v_width: 64, chunk_size: 0}", False),
    ("mixer: mlstm\nmlstm: {heads: 4, qk_width: 32.0, v_width: 64}", False),
    ("mixer: mlstm\nmlstm: {heads: 4, qk_width: 32, v_width: 64, fused: yes}", False),
    ("mixer: mlstm\nmlstm: {heads: 4, v_width: 64}", False),
    ("mixer: mlstm\nmlstm: {heads: 4, qk_width: 32, v_width: 64, piece_size: 0}", False),
    # block keys, flat or per layer group
    ("gated_cross_attention: true", True),
    ("gated_cross_attention: yes", False),
    ("layers: [{count: 1}, {count: 1, gated_cross_attention: true, qk_norm: head}]", True),
    ("moe_modality_ffn_hidden: 0", False),
    # text
    ("name: tiny", True),
    ("name: yes", True),  # text in YAML 1.2
    ("name: 123", False),
    ("name: null", True),
    ("description: on", True),
    ("$schema: ./costcalc.schema.json", True),
    ("$schema: 5", False),
    ("unknown_key: 1", False),
    # integers in YAML 1.2's other forms, and YAML 1.1's
    ("d_model: 0x40", False),
    ("d_model: 0o100", False),
    ("d_model: 0100", False),
    ("d_model: 0b1000000", False),
    ("d_model: 1:04", False),
    ("d_model: 6_4", True),
    # fields given together: a mixture of experts needs its expert count and its top-k
    ("moe_experts: 4\nmoe_top_k: 2", True),
    ("moe_experts: 4", False),
    ("moe_top_k: 2", False),
    ("moe_experts: 4\nmoe_top_k: null", False),
    ("moe_experts: null\nmoe_top_k: null", True),
    ("moe_experts: null", True),
    ("moe_experts: 2\nmoe_top_k: 4", False),
    # budgets: counts
    ("budget: {max_params: 30M}", True),
    ("budget: {max_params: 30m}", True),
    ("budget: {max_params: ' 30 M '}", True),
    ("budget: {max_params: 30000000}", True),
    ("budget: {max_params: '30000000'}", True),
    ("budget: {max_params: '30000000.00'}", True),
    ("budget: {max_params: 1.5B}", True),
    ("budget: {max_params: 1.234T}", True),
    ("budget: {max_params: 1.2340000T}", True),
    ("budget: {max_params: 1.234567890123T}", True),
    ("budget: {max_params: 1.2345678901234T}", False),
    ("budget: {max_params: 0.5}", False),
    ("budget: {max_params: '1000000.5'}", False),
    ("budget: {max_params: 1.2345k}", False),
    ("budget: {max_params: 30X}", False),
    ("budget: {max_params: 1GiB}", False),
    ("budget: {max_params: 30MB}", False),
    ("budget: {max_params: 0}", False),
    ("budget: {max_params: 0M}", False),
    ("budget: {max_params: 0.000k}", False),
    ("budget: {max_params: -30M}", False),
    ("budget: {max_params: 3.0e7}", False),
    ("budget: {max_params: 30000000.0}", False),
    ("budget: {max_params: true}", False),
    ("budget: {max_params: M}", False),
    ("budget: {max_params: 1.M}", False),
    ("budget: {max_params: '${budget.params}'}", False),
    (f"budget: {{max_params: '{'9' * 100}'}}", True),
    (f"budget: {{max_params: '{'9' * 101}'}}", False),
    (f"budget: {{max_params: '{'9' * 99}.9B'}}", True),
    (f"budget: {{max_params: '{'9' * 100}.9B'}}", False),
    # counts: the number syntax of every command-line option
    ("budget: {max_params: '1e12'}", True),
    ("budget: {max_params: '5.76e23'}", True),
    ("budget: {max_params: '1.5E+9'}", True),
    ("budget: {max_params: '1.5e0'}", False),
    ("budget: {max_params: '1e100'}", False),
    ("budget: {max_params: '0e5'}", False),
    ("budget: {max_params: '1e3k'}", False),
    ("budget: {max_params: '1e-3'}", False),
    ("budget: {max_params: 1e12}", False),  # a float in YAML 1.2: quote it or write 1T
    ("budget: {max_params: 124_439_808}", True),
    ("budget: {max_params: '30_000k'}", True),
    ("budget: {max_params: '1__0'}", False),
    ("budget: {max_params: '_10'}", False),
    ("budget: {max_params: '124,439,808'}", False),
    ("budget: {max_params: 128Ki}", True),
    ("budget: {max_params: 1.5Mi}", True),
    ("budget: {max_params: 1.03125Mi}", False),  # whole, but past the 4 decimals read
    ("budget: {max_params: 1.0001Ki}", False),
    # budgets: byte sizes
    ("budget: {max_weight_bytes: 1GiB}", True),
    ("budget: {max_weight_bytes: 1gib}", True),
    ("budget: {max_weight_bytes: 500MB}", True),
    ("budget: {max_weight_bytes: 1.5GB}", True),
    ("budget: {max_weight_bytes: 1.5GiB}", True),
    ("budget: {max_weight_bytes: 1.25GiB}", True),
    ("budget: {max_weight_bytes: 1.0625GiB}", True),
    ("budget: {max_weight_bytes: 1.06250GiB}", True),
    ("budget: {max_weight_bytes: 0.5KiB}", False),  # 512 bytes: a whole size, over budget
    ("budget: {max_weight_bytes: 1.1GiB}", False),
    ("budget: {max_weight_bytes: 0.1KiB}", False),
    ("budget: {max_weight_bytes: 1.0GiB}", True),
    ("budget: {max_weight_bytes: 1000000000b}", True),
    ("budget: {max_weight_bytes: '1000000000'}", False),  # a bare size: bytes or GiB? refused
    ("budget: {max_weight_bytes: 1000000000.5b}", False),
    ("budget: {max_weight_bytes: 1GB.}", False),
    ("budget: {max_weight_bytes: 1Gi}", False),
    ("budget: {max_weight_bytes: 30M}", False),
    ("budget: {max_weight_bytes: 0GiB}", False),
    ("budget: {max_weight_bytes: '1.5e9B'}", True),
    ("budget: {max_weight_bytes: '1.5e9'}", False),
    ("budget: {max_weight_bytes: 24G}", False),
    ("budget: {max_weight_bytes: 1_000MB}", True),
    ("budget: {dtype: bf16}", True),
    ("budget: {dtype: BF16}", False),
    ("budget: {dtype: fp7}", False),
    ("budget: {dtype: 16}", False),
    ("budget: {max_params: 30M, extra: 1}", False),
]
BUDGET_ONLY = {"budget: {max_weight_bytes: 0.5KiB}"}
"""Cases costcalc refuses for being over their budget, not for their value: the schema accepts
their value, and costcalc's only finding is the budget's."""
BEYOND_THE_SCHEMA = {
    "d_model: 0x40": True,  # 64 to YAML 1.1 and 1.2: costcalc integers are plain decimal
    "d_model: 0o100": True,  # 64 to YAML 1.2, text to YAML 1.1 (PyYAML)
    "d_model: 0100": True,  # 100 to YAML 1.2, octal 64 to YAML 1.1
    "d_model: 6_4": False,  # 64 to YAML 1.1, text to YAML 1.2: costcalc reads the separator
    "moe_experts: 2\nmoe_top_k: 4": True,  # a rule comparing two values: draft 4 has none
}
"""Cases the schema cannot judge as costcalc does, each said in docs/ci.md ("What the schema
cannot express"): the schema's verdict here, costcalc's is the case's. A schema sees values, not
how the YAML wrote them, and draft 4 compares no two values."""


def config_text(line: str) -> str:
    key = line.split(":")[0]
    kept = [kept for kept in BASE.splitlines() if kept.split(":")[0] != key]
    return "\n".join([*kept, line]) + "\n"


def schema_verdict(text: str) -> bool:
    data = yaml.load(text, Loader=Yaml12Loader)
    validator = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
    return validator.is_valid(data)


SCHEMA = config_schema()


def costcalc_findings(cli: Invoke, path: Path) -> list[dict[str, Any]]:
    result = cli("check", str(path), "--format", "json")
    [record] = json.loads(result.stdout)
    return list(record["findings"])


@pytest.mark.parametrize(("line", "accepted"), CASES, ids=[line for line, _ in CASES])
def test_schema_and_check_agree(cli: Invoke, tmp_path: Path, line: str, accepted: bool) -> None:
    path = tmp_path / "model.yaml"
    text = config_text(line)
    path.write_text(text, encoding="utf-8")
    found = costcalc_findings(cli, path)
    if line in BUDGET_ONLY:
        [finding] = found
        assert finding["message"].endswith("over the limit of 512 bytes (512 B, 512 B)")
        assert schema_verdict(text)
        return
    schema = BEYOND_THE_SCHEMA.get(line, accepted)
    assert (not found, schema_verdict(text)) == (accepted, schema), found


def test_docs_say_what_the_schema_cannot_express() -> None:
    from tests.conftest import ROOT

    docs = (ROOT / "docs" / "ci.md").read_text()
    section = docs[docs.index("### What the schema cannot express") :]
    for form in ("0x100", "0o400", "0400", "50_257", "moe_top_k", "768.0"):
        assert form in section, form


@pytest.mark.parametrize(
    ("value", "accepted"), [("64", True), ("64.0", False), ("6.4e1", False), ("true", False)]
)
def test_json_configs_agree(cli: Invoke, tmp_path: Path, value: str, accepted: bool) -> None:
    path = tmp_path / "model.json"
    text = f'{{"vocab_size": 100, "context_length": 64, "d_model": {value}, "n_layers": 2, '
    text += '"n_heads": 4, "$schema": "./costcalc.schema.json"}'
    path.write_text(text, encoding="utf-8")
    found = costcalc_findings(cli, path)
    validator = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
    assert (not found, validator.is_valid(json.loads(text))) == (accepted, accepted), found


def test_every_shipped_preset_is_valid_under_the_schema() -> None:
    from tests.conftest import ROOT

    validator = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
    for preset in sorted((ROOT / "presets").glob("*.yaml")):
        if preset.name == "aliases.yaml":  # names for presets, no model
            continue
        data = yaml.load(preset.read_text(), Loader=Yaml12Loader)
        assert validator.is_valid(data), (preset.name, list(validator.iter_errors(data))[:1])
