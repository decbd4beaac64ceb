"""The held-out hostile cases of round 3 (tests/test_hostile_heldout.py runs them): files in odd
encodings, with byte-order marks, huge numbers, deep nesting, duplicate keys, NaN and infinities;
FIFOs, link loops, devices and unreadable files as config paths; huge layer counts through every
command; environments a terminal or a CI runner may have. Each case is a command line, the exit
code docs/cli.md gives it and a few words of the message it must print."""

from __future__ import annotations

import codecs
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import FIXTURES, ROOT

GPT2 = (ROOT / "presets" / "gpt2-small.yaml").read_text(encoding="utf-8")
HF_GPT2 = (FIXTURES / "hf" / "gpt2.json").read_text(encoding="utf-8")
MAX_SIZE = 2**31 - 1


def _yaml(old: str, new: str) -> bytes:
    assert old in GPT2
    return GPT2.replace(old, new).encode()


def _hf(old: str, new: str) -> bytes:
    assert old in HF_GPT2
    return HF_GPT2.replace(old, new).encode()


FILES: dict[str, bytes] = {
    "bom.yaml": codecs.BOM_UTF8 + GPT2.encode(),
    "bom.json": codecs.BOM_UTF8 + HF_GPT2.encode(),
    "utf16le.json": codecs.BOM_UTF16_LE + HF_GPT2.encode("utf-16-le"),
    "utf16be.yaml": codecs.BOM_UTF16_BE + GPT2.encode("utf-16-be"),
    "utf32.json": HF_GPT2.encode("utf-32"),
    "utf16-no-bom.json": HF_GPT2.encode("utf-16-le"),
    "utf16be-no-bom.yaml": _yaml("GPT-2 small", "GPT-2 sm\xe4ll \u4e2d")
    .decode()
    .encode("utf-16-be"),
    "latin1.yaml": _yaml("GPT-2 small", "GPT-2 sm\xe4ll").decode().encode("latin-1"),
    "bad-utf8-key.yaml": GPT2.encode() + b"d_mod\xffel: 3\n",
    "crlf.yaml": GPT2.replace("\n", "\r\n").encode(),
    "cr.yaml": GPT2.replace("\n", "\r").encode(),
    "nul.yaml": GPT2.encode() + b"\x00\n",
    "surrogate-key.json": b'{"\\udfff": 1, "vocab_size": 10}',
    "deep-list.json": b"[" * 100_000 + b"]" * 100_000,
    "deep-object.json": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "deep-flow.yaml": b"a: " + b"[" * 50_000 + b"]" * 50_000,
    "laughs.yaml": b"a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n"
        for p, n in zip("abcdefg", "bcdefgh", strict=True)
    ).encode(),
    "self-alias.yaml": b"a: &a [*a]\n",
    "duplicate.json": (HF_GPT2.rstrip().removesuffix("}") + ',\n  "n_embd": 1024\n}').encode(),
    "duplicate.yaml": (GPT2 + "d_model: 1024\n").encode(),
    "duplicate-budget.yaml": (GPT2 + "budget:\n  max_params: 1B\n  max_params: 2B\n").encode(),
    "digits.yaml": _yaml("d_model: 768", "d_model: " + "9" * 5_000),
    "float-overflow.json": _hf('"n_embd": 768', '"n_embd": 1e400'),
    "float-size.json": _hf('"n_embd": 768', '"n_embd": 768.0'),
    "nan.yaml": _yaml("ffn_mult: 4", "ffn_mult: .nan"),
    "inf.yaml": _yaml("ffn_mult: 4", "ffn_mult: .inf"),
    "minus-inf.yaml": _yaml("d_model: 768", "d_model: -.inf"),
    "nan.json": _hf('"n_embd": 768', '"n_embd": NaN'),
    "inf-epsilon.json": _hf('"layer_norm_epsilon": 1e-05', '"layer_norm_epsilon": Infinity'),
    "budget-inf.yaml": (GPT2 + "budget: {max_params: .inf}\n").encode(),
    "budget-nan.yaml": (GPT2 + "budget: {max_weight_bytes: .nan}\n").encode(),
    "budget-negative.yaml": (GPT2 + "budget: {max_params: -1}\n").encode(),
    "python-tag.yaml": (GPT2 + 'x: !!python/object:os.system "echo"\n').encode(),
    "binary-tag.yaml": _yaml(
        "description: GPT-2 small (117M in the paper)", "description: !!binary aGk="
    ),
    "date-name.yaml": _yaml("name: gpt2-small", "name: 2001-12-14"),
    "two-documents.yaml": (GPT2 + "---\n" + GPT2).encode(),
    "empty.yaml": b"",
    "blank.json": b"  \n\t ",
    "null.yaml": b"null\n",
    "list.json": b"[1, 2, 3]",
    "scalar.yaml": b"42\n",
    "int-key.yaml": (GPT2 + "1: 2\n").encode(),
    "null-key.yaml": (GPT2 + "~: 2\n").encode(),
    "empty-key.yaml": (GPT2 + "'': 2\n").encode(),
    "list-key.yaml": (GPT2 + "? [a, b]\n: 2\n").encode(),
    "over-a-mebibyte.json": b" " * 1_100_000 + HF_GPT2.encode(),
    "many-groups.yaml": (GPT2 + "layers: [" + ", ".join(["{count: 1}"] * 5_000) + "]\n").encode(),
    "negative-heads.json": _hf('"n_head": 12', '"n_head": -12'),
    "zero-heads.json": _hf('"n_head": 12', '"n_head": 0'),
    "true-heads.json": _hf('"n_head": 12', '"n_head": true'),
    "text-heads.json": _hf('"n_head": 12', '"n_head": "12"'),
    "list-type.json": _hf('"model_type": "gpt2"', '"model_type": ["gpt2"]'),
    "arabic-digit-type.json": _hf('"model_type": "gpt2"', '"model_type": "gpt\u0662"'),
    "huge-layers.yaml": _yaml("n_layers: 12", f"n_layers: {MAX_SIZE}"),
    "huge-layers.json": _hf('"n_layer": 12', f'"n_layer": {MAX_SIZE}'),
    "huge-context.yaml": _yaml("context_length: 1024", f"context_length: {MAX_SIZE}"),
    "huge-everything.yaml": _yaml("vocab_size: 50257", f"vocab_size: {MAX_SIZE}")
    .decode()
    .replace("d_model: 768", "d_model: 2147483640")
    .replace("n_heads: 12", "n_heads: 8")
    .replace("n_layers: 12", f"n_layers: {MAX_SIZE}")
    .encode(),
    "past-size.yaml": _yaml("n_layers: 12", f"n_layers: {MAX_SIZE + 1}"),
    "\udcff\udcfe.yaml": GPT2.encode(),
}


def build(folder: Path) -> Path:
    """Every file of the cases in ``folder``, and the special ones: a FIFO, a link loop, a
    directory named like a config, an unreadable file."""
    for name, data in FILES.items():
        (folder / os.fsencode(name).decode("utf-8", "surrogateescape")).write_bytes(data)
    os.mkfifo(folder / "fifo.yaml")
    (folder / "loop.yaml").symlink_to("loop.yaml")
    (folder / "folder.yaml").mkdir()
    unreadable = folder / "unreadable.yaml"
    unreadable.write_text(GPT2)
    unreadable.chmod(0)
    _hub_cache(folder / "hub")
    return folder


COMMIT = "0123456789abcdef" * 2 + "01234567"


def _hub_cache(hub: Path) -> None:
    """A Hugging Face cache whose snapshots hold what no download leaves: a config.json that is
    a folder, a FIFO, 10 GB of holes or a link out of the cache; a ref that is a folder; a
    snapshots entry that is a file; safetensors that are a FIFO, a folder or /dev/zero; an
    index naming a shard outside its folder."""

    def model(name: str, config: bool = True) -> Path:
        repo = hub / f"models--org--{name}"
        snapshot = repo / "snapshots" / COMMIT
        snapshot.mkdir(parents=True)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(COMMIT)
        if config:
            (snapshot / "config.json").write_text(HF_GPT2)
        return snapshot

    (model("config-folder", config=False) / "config.json").mkdir()
    os.mkfifo(model("config-fifo", config=False) / "config.json")
    with (model("config-holes", config=False) / "config.json").open("wb") as holes:
        holes.truncate(10 * 2**30)
    (model("config-out", config=False) / "config.json").symlink_to("/proc/self/environ")
    ref = model("ref-folder").parent.parent / "refs" / "main"
    ref.unlink()
    ref.mkdir()
    snapshots = model("snapshots-file").parent
    shutil.rmtree(snapshots)
    snapshots.write_text("")
    os.mkfifo(model("weights-fifo") / "model.safetensors")
    (model("weights-folder") / "model.safetensors").mkdir()
    (model("weights-zero") / "model.safetensors").symlink_to("/dev/zero")
    index = {"weight_map": {"wte.weight": "../../../../etc/passwd"}}
    (model("index-out") / "model.safetensors.index.json").write_text(json.dumps(index))


@dataclass(frozen=True)
class Case:
    """One command line (``{d}`` is the folder of the files), its exit code and words of the
    message it must print (on stderr; on stdout for check, which reports there)."""

    name: str
    args: tuple[str, ...]
    code: int
    says: str = ""
    env: dict[str, str] = field(default_factory=dict)
    nobody: bool = False
    """Run as nobody (root reads any file whatever its mode)."""

    def argv(self, folder: Path) -> list[str]:
        return [arg.replace("{d}", str(folder)) for arg in self.args]

    def environ(self, folder: Path) -> dict[str, str]:
        return {name: value.replace("{d}", str(folder)) for name, value in self.env.items()}


def _params(name: str, code: int, says: str, *more: str) -> Case:
    return Case(f"params:{name}", ("params", "-c", "{d}/" + name, *more), code, says)


def _check(name: str, says: str) -> Case:
    return Case(f"check:{name}", ("check", "{d}/" + name), 1, says)


HUGE = "{d}/huge-layers.yaml"
CASES: list[Case] = [
    _params("bom.yaml", 0, ""),
    _params("bom.json", 0, ""),
    _params("utf16le.json", 1, "UTF-16 text (its byte-order mark says so)"),
    _params("utf16be.yaml", 1, "UTF-16 text"),
    _params("utf32.json", 1, "UTF-32 text"),
    _params("utf16-no-bom.json", 1, "UTF-16 text (little-endian, its NUL bytes say so"),
    _params("utf16be-no-bom.yaml", 1, "UTF-16 text (big-endian, its NUL bytes say so"),
    _params("latin1.yaml", 1, "latin1.yaml:2: not UTF-8 text"),
    _params("bad-utf8-key.yaml", 1, "not UTF-8 text"),
    _params("crlf.yaml", 0, ""),
    _params("cr.yaml", 0, ""),
    _params("nul.yaml", 1, "binary file (contains NUL bytes)"),
    _params("surrogate-key.json", 1, 'key "\\udfff" is no Unicode text (a lone surrogate)'),
    _params("deep-list.json", 1, "JSON nested too deeply"),
    _params("deep-object.json", 1, "JSON nested too deeply"),
    _params("deep-flow.yaml", 1, "exceeded maximum nesting depth"),
    _params("laughs.yaml", 1, "over 10,000 values once its aliases are expanded"),
    _params("self-alias.yaml", 1, "nested more than 64 levels deep"),
    _params("duplicate.json", 1, "duplicate key 'n_embd'"),
    _params("duplicate.yaml", 1, "duplicate key 'd_model' (first on line 6)"),
    _params("duplicate-budget.yaml", 1, "duplicate key 'max_params'"),
    _params("digits.yaml", 1, "an integer of 5,000 digits is too long"),
    _params("float-overflow.json", 1, "Infinity is not a finite number"),
    _params("float-size.json", 1, "Input should be a valid integer (got 768.0)"),
    _params("nan.yaml", 1, "ffn_mult: nan is not a number a config can hold"),
    _params("inf.yaml", 1, "ffn_mult: inf is not a number"),
    _params("minus-inf.yaml", 1, "d_model: -inf is not a number"),
    _params("nan.json", 1, "NaN is not a finite number"),
    _params("inf-epsilon.json", 0, ""),  # transformers reads it; it sizes nothing
    _params("budget-inf.yaml", 1, "budget.max_params: inf is not a number"),
    _params("budget-nan.yaml", 1, "budget.max_weight_bytes: nan is not a number"),
    _check("budget-negative.yaml", "budget.max_params"),
    _params("python-tag.yaml", 1, "YAML tag '!!python/object:os.system' refused"),
    _params("binary-tag.yaml", 1, "YAML tag '!!binary' refused: only plain data is read"),
    Case("params:date-name.yaml", ("params", "-c", "{d}/date-name.yaml", "-f", "json"), 0),
    _params("two-documents.yaml", 1, "several YAML documents in one file"),
    _params("empty.yaml", 1, "empty file"),
    _params("blank.json", 1, "empty file"),
    _params("null.yaml", 1, "found null"),
    _params("list.json", 1, "found a list"),
    _params("scalar.yaml", 1, "found a number"),
    _params("int-key.yaml", 1, "int-key.yaml:18: key 1 reads as an integer in YAML, not as a"),
    _params("null-key.yaml", 1, "null-key.yaml:18: key ~ reads as null (no value) in YAML"),
    _params("empty-key.yaml", 1, "'' (line 18): unknown key"),
    _params("list-key.yaml", 1, "found unhashable key"),
    _params("over-a-mebibyte.json", 1, "a file over 1,048,576 is refused"),
    _params("many-groups.yaml", 1, "over 10,000 values"),
    _params("negative-heads.json", 1, "n_head"),
    _params("zero-heads.json", 1, "n_head"),
    _params("true-heads.json", 1, "n_head"),
    _params("text-heads.json", 1, "n_head"),
    _params("list-type.json", 1, "unsupported model_type ['gpt2']"),
    _params("arabic-digit-type.json", 1, "unsupported model_type 'gpt\u0662'"),
    _params("past-size.yaml", 1, "less than or equal to 2147483647"),
    _params("fifo.yaml", 1, "not a regular file (a device, FIFO or socket)"),
    _params("loop.yaml", 1, "too many levels of symbolic links"),
    _params("folder.yaml", 1, "is a directory without a config.json"),
    _params("\udcff\udcfe.yaml", 0, ""),
    _params("no-such.yaml", 1, "no such file"),
    Case("params:devzero", ("params", "-c", "/dev/zero"), 1, "not a regular file"),
    Case("params:environ", ("params", "-c", "/proc/self/environ"), 1, "binary file"),
    Case("params:long-path", ("params", "-c", "a/" * 3_000 + "x.yaml"), 1, "name too long"),
    Case("params:empty-path", ("params", "-c", ""), 2, "--config: an empty path names no file"),
    Case("memory:empty-path", ("memory", "-c", ""), 2, "an empty path"),
    Case(
        "params:unreadable",
        ("params", "-c", "{d}/unreadable.yaml"),
        1,
        "permission denied",
        nobody=True,
    ),
    Case("check:unreadable", ("check", "{d}/unreadable.yaml"), 1, "permission denied", nobody=True),
    _check("fifo.yaml", "not a regular file"),
    _check("loop.yaml", "too many levels of symbolic links"),
    _check("utf16le.json", "UTF-16 text"),
    Case("params:huge-layers", ("params", "-c", HUGE, "-T", "1024", "-B", "64", "-f", "json"), 0),
    Case("params:huge-layers-hf", ("params", "-c", "{d}/huge-layers.json", "-f", "json"), 0),
    Case("params:huge-decode", ("params", "-c", HUGE, "--prompt", "512", "--generate", "512"), 0),
    Case("memory:huge-layers", ("memory", "-c", HUGE, "--train", "-T", "1024", "-B", "8"), 0),
    Case(
        "memory:huge-layers-zero",
        ("memory", "-c", HUGE, "--train", "-T", "64", "--gpus", "64", "--tp", "4", "--zero", "3"),
        2,
        "--zero partitions parameter by parameter: one rank would hold 25,769,803,768",
    ),
    Case(
        "lora:huge-layers-zero",
        (
            "lora",
            "-c",
            HUGE,
            "-t",
            "all-linear",
            "--train",
            "-T",
            "64",
            "--gpus",
            "8",
            "--zero",
            "2",
        ),
        2,
        "at most 1,000,000 are listed",
    ),
    Case(
        "memory:huge-layers-fsdp",
        (
            "memory",
            "-c",
            HUGE,
            "--train",
            "-T",
            "64",
            "--gpus",
            "64",
            "--tp",
            "4",
            "--fsdp",
            "full",
        ),
        0,
    ),
    Case(
        "memory:huge-llamacpp",
        ("memory", "-c", HUGE, "--engine", "llamacpp", "-T", "64"),
        2,
        "at most 100,000 layers",
    ),
    Case(
        "memory:huge-vllm",
        ("memory", "-c", "{d}/huge-everything.yaml", "--engine", "vllm", "--gpu", "h100-sxm"),
        1,
        "does not fit",
    ),
    Case(
        "memory:huge-context",
        ("memory", "-c", "{d}/huge-context.yaml", "-T", str(MAX_SIZE), "-f", "json"),
        0,
    ),
    Case(
        "plan:huge-layers",
        ("plan", "-c", HUGE, "--gpu", "h100-sxm", "--tokens", "1T", "-T", "1024"),
        0,
    ),
    Case("plan:huge-decode", ("plan", "-c", HUGE, "--gpu", "h100-sxm", "--prompt", "512"), 0),
    Case("lora:huge-layers", ("lora", "-c", HUGE, "-t", "all-linear", "--train", "-T", "64"), 0),
    Case("scale:huge-layers", ("scale", "-c", HUGE, "--d", "768", "1536"), 0),
    Case("check:huge-layers", ("check", HUGE), 0),
    Case(
        "params:huge-gguf",
        ("params", "-c", HUGE, "--dtype", "gguf:Q4_K_M"),
        2,
        "GGUF mixes are assigned layer by layer: at most 100,000 layers",
    ),
    *(
        Case(
            f"hub:{name}",
            ("params", "--hf", f"org/{name}"),
            1,
            says,
            env={"HF_HUB_CACHE": "{d}/hub", "HF_HUB_OFFLINE": "1"},
        )
        for name, says in [
            ("config-folder", "config.json: is a directory, not a config file"),
            ("config-fifo", "config.json: not a regular file"),
            ("config-holes", "a file over 1,048,576 is refused"),
            ("config-out", "resolves outside the cache"),
            ("ref-folder", "refs/main does not hold a commit hash; refused"),
            ("snapshots-file", "a part of the path is not a directory"),
            ("weights-fifo", "model.safetensors: not a regular file"),
            ("weights-folder", "model.safetensors: is a directory"),
            ("weights-zero", "resolves to /dev/zero, outside"),
            ("index-out", "names '../../../../etc/passwd'; expected a file name inside"),
        ]
    ),
    Case("params:columns-text", ("params", "-p", "gpt2"), 0, env={"COLUMNS": "abc"}),
    Case("params:columns-negative", ("params", "-p", "gpt2"), 0, env={"COLUMNS": "-5"}),
    Case("params:columns-huge", ("params", "-p", "gpt2"), 0, env={"COLUMNS": "9" * 20}),
    Case(
        "params:hub-cache-device",
        ("params", "--hf", "org/model"),
        1,
        "cannot read the cache (/dev/null)",
        env={"HF_HUB_CACHE": "/dev/null", "HF_HUB_OFFLINE": "1"},
    ),
]


def stream(case: Case, stdout: str, stderr: str) -> str:
    """Where the case's message goes: check reports on stdout, the rest on stderr."""
    return stdout if case.args[0] == "check" else stderr


def parses(case: Case, stdout: str) -> bool:
    """A successful run's output reads back: JSON as JSON, the rest as text."""
    if "json" in case.args:
        json.loads(stdout)
    return bool(stdout)
