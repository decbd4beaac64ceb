"""Every console example in README.md and docs/ runs, and its output is the one stored.

Each ``$ costcalc ...`` line of a ``console`` block runs in a sandbox holding the files the docs
name (``config.json``, ``./my-model``, ``configs/``, a Hugging Face cache with Qwen2.5-0.5B and
Qwen3-0.6B) on a 100-column terminal. The outputs of one doc are stored together in
``tests/doc_examples/<doc>.txt``: the command, its output, ``[exit N]`` when not 0. A changed
output fails the test; after checking the change, store the new outputs with
``COSTCALC_UPDATE_DOC_EXAMPLES=1 python -m pytest tests/test_doc_examples.py``.

A ``text`` block that starts with ``$ costcalc ...`` is an excerpt: each of its lines other
than ``...`` must appear in the command's output.
"""

from __future__ import annotations

import difflib
import glob
import json
import os
import re
import shlex
import shutil
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costcalc.cli.app import app
from tests.conftest import FIXTURES, ROOT

STORED = Path(__file__).resolve().parent / "doc_examples"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
UPDATE = os.environ.get("COSTCALC_UPDATE_DOC_EXAMPLES") == "1"
BLOCK = re.compile(r"^```(console|text)\n(.*?)^```", re.M | re.S)
REVISION = "0" * 40


def examples(doc: Path) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The doc's console commands, and its excerpts (command, lines shown)."""
    commands: list[str] = []
    excerpts: list[tuple[str, list[str]]] = []
    for kind, body in BLOCK.findall(doc.read_text()):
        lines = body.splitlines()
        if kind == "console":
            commands += [c for line in lines if (c := command_of(line))]
        elif lines and (c := command_of(lines[0])):
            excerpts.append((c, [line for line in lines[1:] if line.strip() != "..."]))
    return commands, excerpts


def command_of(line: str) -> str | None:
    """``costcalc ARGS`` from a ``$ costcalc ARGS  # comment`` line; None for other commands."""
    if not line.startswith("$ costcalc "):
        return None
    return re.split(r"\s+#\s", line[2:], maxsplit=1)[0].strip()


def gpt2_checkpoint(folder: Path, config: dict[str, int]) -> None:
    """``model.safetensors`` of a GPT-2 model as transformers saves it, headers only (the data
    is a hole in a sparse file)."""
    V, N, D, L = (config[k] for k in ("vocab_size", "n_positions", "n_embd", "n_layer"))
    shapes: dict[str, list[int]] = {"wte.weight": [V, D], "wpe.weight": [N, D]}
    for i in range(L):
        block = {
            "ln_1.weight": [D], "ln_1.bias": [D], "attn.c_attn.weight": [D, 3 * D],
            "attn.c_attn.bias": [3 * D], "attn.c_proj.weight": [D, D], "attn.c_proj.bias": [D],
            "ln_2.weight": [D], "ln_2.bias": [D], "mlp.c_fc.weight": [D, 4 * D],
            "mlp.c_fc.bias": [4 * D], "mlp.c_proj.weight": [4 * D, D], "mlp.c_proj.bias": [D],
        }  # fmt: skip
        shapes |= {f"h.{i}.{name}": shape for name, shape in block.items()}
    shapes |= {"ln_f.weight": [D], "ln_f.bias": [D]}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        size = 4 * eval("*".join(map(str, shape)))
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    with open(folder / "model.safetensors", "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        handle.truncate(8 + len(raw) + offset)


def sandbox(root: Path) -> Path:
    """The files and the Hugging Face cache the docs' examples name."""
    shutil.copy(FIXTURES / "hf" / "qwen2.5-0.5b.json", root / "config.json")
    model = root / "my-model"
    model.mkdir()
    shutil.copy(FIXTURES / "hf" / "book-gpt-fairytale.json", model / "config.json")
    gpt2_checkpoint(model, json.loads((model / "config.json").read_text()))
    edited = root / "edited-model"  # its config says a layer fewer than its headers hold
    shutil.copytree(model, edited)
    config = json.loads((edited / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**config, "n_layer": config["n_layer"] - 1}))
    shutil.copytree(FIXTURES / "repo" / "configs" / "good", root / "configs")
    nsmc = {"n_embd": 192, "n_layer": 4, "n_head": 4, "block_size": 1024, "vocab_size": 50257}
    (root / "configs" / "nsmc.json").write_text(json.dumps({**nsmc, "bias": True}))
    for folder, fixture in (("gpt2", "gpt2"), ("mixtral", "mixtral-8x7b")):
        (root / folder).mkdir()
        shutil.copy(FIXTURES / "hf" / f"{fixture}.json", root / folder / "config.json")
    shutil.copytree(FIXTURES / "index-only" / "gpt-oss-20b", root / "gpt-oss-20b")
    typo = json.loads((FIXTURES / "hf" / "llama-3.2-1b.json").read_text())
    typo["num_key_value_head"] = typo.pop("num_key_value_heads")
    (root / "typo").mkdir()
    (root / "typo" / "config.json").write_text(json.dumps(typo, indent=2))
    (root / "models" / "llama").mkdir(parents=True)
    shutil.copy(FIXTURES / "hf" / "llama-3.2-1b.json", root / "models" / "llama" / "config.json")
    for repo, fixture in (
        ("Qwen--Qwen2.5-0.5B", "qwen2.5-0.5b"),
        ("Qwen--Qwen3-0.6B", "qwen3-0.6b"),
        ("Qwen--Qwen3-8B", "qwen3-8b"),
        ("meta-llama--Llama-3.1-8B", "llama-3.1-8b"),
    ):
        cached = root / "hub" / f"models--{repo}"
        (cached / "snapshots" / REVISION).mkdir(parents=True)
        (cached / "refs").mkdir()
        for ref in ("main", "v1.0"):  # a branch and a tag, as the cache keeps them
            (cached / "refs" / ref).write_text(REVISION)
        shutil.copy(
            FIXTURES / "hf" / f"{fixture}.json", cached / "snapshots" / REVISION / "config.json"
        )
    return root


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    # A folder of a fixed name: a config.json read in it is named after it (``my-project``).
    (tmp_path / "my-project").mkdir()
    root = sandbox(tmp_path / "my-project")
    monkeypatch.chdir(root)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("HF_HUB_CACHE", "hub")  # relative: outputs do not name the sandbox
    runner = CliRunner()

    def invoke(command: str) -> str:
        args: list[str] = []
        for word in shlex.split(command)[1:]:
            if word == ">":
                break
            args += sorted(glob.glob(word)) if "*" in word else [word]
        result = runner.invoke(app, args, catch_exceptions=False)
        out = (result.stdout + result.stderr).replace(f"{root}/", "")
        code = f"[exit {result.exit_code}]\n" if result.exit_code else ""
        return out + code

    return invoke


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_console_examples_print_the_stored_output(doc: Path, run) -> None:  # type: ignore[no-untyped-def]
    commands, excerpts = examples(doc)
    for command, lines in excerpts:
        out = run(command)
        missing = [line for line in lines if line.rstrip() not in out]
        assert not missing, f"{doc.name}: `{command}` does not print {missing}"
    if not commands:
        return
    text = "".join(f"$ {command}\n{run(command)}\n" for command in commands)
    stored = STORED / f"{doc.stem}.txt"
    if UPDATE:
        STORED.mkdir(exist_ok=True)
        stored.write_text(text)
    assert stored.exists(), (
        f"no stored output for {doc.name}; run with COSTCALC_UPDATE_DOC_EXAMPLES=1"
    )
    expected = stored.read_text()
    diff = "\n".join(difflib.unified_diff(expected.splitlines(), text.splitlines(), lineterm=""))
    assert text == expected, f"{doc.name}: documented output changed:\n{diff[:4000]}"


def test_the_examples_are_found() -> None:
    commands, excerpts = examples(ROOT / "README.md")
    assert "costcalc params -p gpt2-small --d 1536" in commands
    assert all(not c.startswith("pip") for c in commands)
    assert excerpts and excerpts[0][0] == "costcalc params -p book-gpt-small --explain"


def test_a_changed_output_fails(tmp_path: Path, run) -> None:  # type: ignore[no-untyped-def]
    # The comparison is of the whole text: one changed figure is a difference.
    out = run("costcalc params -p gpt2-small")
    assert "124,439,808" in out
    assert out.replace("124,439,808", "124,439,809") != out
