"""`costcalc completion SHELL`: the scripts load in bash, zsh and fish (installed from the
operating system's packages when missing) and complete commands, options, preset and GPU names;
they are generated from the app, and costcalc's start-up does not pay for them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from costcalc.cli.completion import command_words
from costcalc.gpus import catalogue
from costcalc.presets import preset_names
from tests.conftest import Invoke


@pytest.fixture(scope="module")
def shells() -> None:
    """bash, zsh and fish, installed from Debian's packages when missing (as .ci/run does)."""
    missing = [shell for shell in ("bash", "zsh", "fish") if shutil.which(shell) is None]
    if missing and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing],
            check=False,
            capture_output=True,
        )
    missing = [shell for shell in ("bash", "zsh", "fish") if shutil.which(shell) is None]
    assert not missing, f"{', '.join(missing)} not installed: apt-get install -y zsh fish"


def script(cli: Invoke, shell: str, tmp_path: Path) -> Path:
    result = cli("completion", shell)
    assert result.exit_code == 0 and result.stderr == ""
    path = tmp_path / f"costcalc.{shell}"
    path.write_text(result.stdout)
    return path


def run(*command: str) -> list[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.splitlines()


BASH = 'source "$1"; COMP_WORDS=($2); COMP_CWORD=$3; _costcalc; printf "%s\\n" "${COMPREPLY[@]}"'


def bash(path: Path, words: str, cword: int) -> list[str]:
    return run("bash", "--norc", "--noprofile", "-c", BASH, "bash", str(path), words, str(cword))


# The completion system's own compadd and _files are builtins of a widget; outside one they are
# replaced by functions that print what they are given.
ZSH = (
    'autoload -Uz compinit && compinit -u -D; source "$1"; '
    'compadd() { shift ${@[(i)--]}; print -l -- "$@"; }; _files() { print "<files>"; }; '
    "words=(${=2}); CURRENT=$3; _costcalc"
)


def zsh(path: Path, words: str, current: int) -> list[str]:
    return run("zsh", "-f", "-c", ZSH, "zsh", str(path), words, str(current))


def fish(path: Path, line: str) -> list[str]:
    code = f'source "{path}"; complete -C "{line}"'
    return [row.split("\t")[0] for row in run("fish", "--no-config", "-c", code)]


def test_bash_completes_presets_gpus_commands(shells: None, cli: Invoke, tmp_path: Path) -> None:
    path = script(cli, "bash", tmp_path)
    assert bash(path, "costcalc params -p gpt2-sm", 3) == ["gpt2-small"]
    assert bash(path, "costcalc presets show qwen3-8", 3) == ["qwen3-8b"]
    assert bash(path, "costcalc memory --gpu h100-s", 3) == ["h100-sxm"]
    assert bash(path, "costcalc pre", 1) == ["presets"]
    assert bash(path, "costcalc params --form", 2) == ["--format"]
    assert bash(path, "costcalc params -f js", 3) == ["json", "jsonl"]
    assert run("bash", "--norc", "-c", f'source "{path}"; complete -p costcalc') == [
        "complete -o default -F _costcalc costcalc"
    ]


def test_zsh_completes_presets_gpus_commands(shells: None, cli: Invoke, tmp_path: Path) -> None:
    path = script(cli, "zsh", tmp_path)
    assert "gpt2-small" in zsh(path, "costcalc params -p gpt2-sm", 4)
    assert zsh(path, "costcalc params -c x", 4) == ["<files>"]
    assert set(zsh(path, "costcalc memory --gpu h1", 4)) == set(catalogue())
    assert "presets" in zsh(path, "costcalc pre", 2)
    assert "--train" in zsh(path, "costcalc memory --tr", 3)
    # Loaded from $fpath, compinit registers it by its #compdef line.
    folder = tmp_path / "functions"
    folder.mkdir()
    (folder / "_costcalc").write_text(path.read_text())
    code = f"fpath=({folder} $fpath); autoload -Uz compinit; compinit -u -D; "
    code += "print $_comps[costcalc]"
    assert run("zsh", "-f", "-c", code) == ["_costcalc"]


def test_fish_completes_presets_gpus_commands(shells: None, cli: Invoke, tmp_path: Path) -> None:
    path = script(cli, "fish", tmp_path)
    assert fish(path, "costcalc params -p gpt2-sm") == ["gpt2-small"]
    assert fish(path, "costcalc presets show qwen3-8") == ["qwen3-8b"]
    assert fish(path, "costcalc memory --gpu h100-s") == ["h100-sxm"]
    assert fish(path, "costcalc pres") == ["presets"]
    assert fish(path, "costcalc params -f js") == ["json", "jsonl"]


def test_the_scripts_are_generated_from_the_app(cli: Invoke) -> None:
    """Every command and option is in each script, and every preset and GPU name."""
    commands = command_words()
    paths = {c.path for c in commands}
    assert {"", "params", "memory", "presets", "presets show", "completion"} <= paths
    options = {name for c in commands for o in c.options for name in o.names}
    assert {"--preset", "-p", "--gpu", "--format", "--no-tie", "-h"} <= options
    for shell in ("bash", "zsh", "fish"):
        text = cli("completion", shell).stdout
        for name in (*preset_names(), *catalogue()):
            assert name in text, (shell, name)
        for option in options - {"-h"}:
            assert option.lstrip("-") in text, (shell, option)


def test_an_unknown_shell_is_a_usage_error(cli: Invoke) -> None:
    result = cli("completion", "zhs")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown shell 'zhs' (did you mean 'zsh'?)")


def test_start_up_does_not_pay_for_completion() -> None:
    """A command other than completion never imports it."""
    code = (
        "import sys\nfrom costcalc.cli.app import app\n"
        "try:\n    app(['params', '-p', 'gpt2-small', '-f', 'json'], prog_name='costcalc')\n"
        "except SystemExit:\n    pass\n"
        "sys.stderr.write(str('costcalc.cli.completion' in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr == "False"
