"""`costcalc completion SHELL`: a static completion script for bash, zsh or fish.

The script is generated from the commands themselves (every command, subcommand and option,
the choices of an option that has them, the shipped presets and the GPUs of the catalogue), and
the shell completes from it alone: a TAB never runs costcalc, and costcalc's start-up does not
pay for completion (typer's own runs the program at every TAB and made every run 2.7x slower).
Regenerate it after upgrading costcalc; docs/cli.md says where each shell reads it.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from costcalc.cli.common import user_errors

SHELLS = ("bash", "zsh", "fish")

FILES, PRESETS, GPUS = "<files>", "<presets>", "<gpus>"
"""The values of an option or argument that names files, presets or GPUs: each script lists
the presets and GPUs once."""


@dataclass(frozen=True)
class Option:
    """One option of a command: its names and what its value completes to (None: a flag that
    takes no value; ``()``: a value of the user's own)."""

    names: tuple[str, ...]
    values: tuple[str, ...] | None


@dataclass(frozen=True)
class CommandWords:
    """One command (``params``, ``presets show``): its options, what its arguments complete to,
    its subcommands and the first line of its help."""

    path: str
    options: tuple[Option, ...]
    arguments: tuple[str, ...]
    subcommands: tuple[str, ...]
    summary: str


def completion(
    shell: Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")],
) -> None:
    """Print a completion script for SHELL (bash, zsh or fish): commands, options, preset and
    GPU names.

    bash: costcalc completion bash > ~/.local/share/bash-completion/completions/costcalc;
    zsh: costcalc completion zsh > ~/.zfunc/_costcalc (a folder on $fpath, before compinit);
    fish: costcalc completion fish > ~/.config/fish/completions/costcalc.fish.
    """
    from costcalc.errors import check_choice

    with user_errors():
        check_choice(shell, SHELLS, "shell")
        words = command_words()
        typer.echo({"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[shell](words))


def command_words() -> list[CommandWords]:
    """Every command of ``costcalc`` and the words it completes, the root (path "") first."""
    from costcalc.cli.app import app

    root = typer.main.get_command(app)
    found: list[CommandWords] = []

    def walk(command: Any, path: str, context: Any) -> None:
        subcommands = {
            name: command.get_command(context, name) for name in _subcommand_names(command, context)
        }
        options: list[Option] = []
        arguments: tuple[str, ...] = ()
        for param in command.params:
            if param.param_type_name == "argument":
                arguments = _values(param, path)
            elif not param.hidden:
                names = (*param.opts, *param.secondary_opts)
                options.append(Option(names, None if param.is_flag else _values(param, path)))
        options.append(Option(("--help", "-h"), None))
        summary = (command.help or "").strip().split("\n", 1)[0]
        found.append(CommandWords(path, tuple(options), arguments, tuple(subcommands), summary))
        for name, sub in subcommands.items():
            walk(sub, f"{path} {name}".strip(), typer.Context(sub, parent=context, info_name=name))

    walk(root, "", typer.Context(root, info_name="costcalc"))
    return found


def _subcommand_names(command: Any, context: Any) -> list[str]:
    return list(command.list_commands(context)) if hasattr(command, "list_commands") else []


def _values(param: Any, path: str) -> tuple[str, ...]:
    """What a value of ``param`` completes to: preset names, GPU names, files, an enum's values,
    or nothing (a value of the user's own)."""
    names = set(getattr(param, "opts", ()))
    if "--preset" in names or (path == "presets show" and param.name == "name"):
        return (PRESETS,)
    if "--gpu" in names:
        return (GPUS,)
    annotation = param.type_descriptor.annotation
    inner = typing.get_args(annotation)[0] if typing.get_args(annotation) else annotation
    metavar = (param.metavar or "").upper()
    if inner is Path or any(word in metavar for word in ("FILE", "PATH", "FOLDER")):
        return (FILES,)
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return tuple(str(member.value) for member in inner)
    return ()


def _words(values: tuple[str, ...]) -> str:
    """``values`` as words of a script, the presets and GPUs by their variable."""
    return " ".join({PRESETS: "$presets", GPUS: "$gpus"}.get(v, v) for v in values)


def _cases(
    commands: list[CommandWords],
    pattern: str,
    reply: Callable[[tuple[str, ...]], str],
    offer: Callable[[tuple[str, ...]], str],
) -> list[str]:
    """One ``case`` branch per command (bash and zsh alike, ``pattern`` their label syntax): the
    values of the option before the cursor, its arguments' values, else ``offer`` of its
    subcommands and options."""
    cases = []
    for command in commands:
        values = [
            f"                {pattern.format('|'.join(names))} {reply(kind)}; return ;;"
            for kind, names in _by_values(command.options).items()
        ]
        words = [*command.subcommands, *(name for o in command.options for name in o.names)]
        argument = ""
        if command.arguments:
            argument = (
                f"\n            [[ $cur != -* ]] && {{ {reply(command.arguments)}; return; }}"
            )
        body = "\n".join(values)
        case_prev = f'\n            case "$prev" in\n{body}\n            esac' if values else ""
        label = pattern.format(f'"{command.path}"')
        cases.append(f"        {label}{case_prev}{argument}\n            {offer(tuple(words))} ;;")
    return cases


def bash_script(commands: list[CommandWords]) -> str:
    """A ``complete -F`` function: the command path read from the words typed, then the values
    of the option before the cursor, or the options, subcommands and arguments."""
    from costcalc import __version__

    paths = " | ".join(f'"{c.path}"' for c in commands if c.path)
    cases = _cases(commands, "{})", _bash_reply, lambda words: f'words="{_words(words)}"')
    presets, gpus = _names()
    return f"""# bash completion for costcalc {__version__}, generated by `costcalc completion bash`
_costcalc() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    local presets="{presets}"
    local gpus="{gpus}"
    local command="" word words i
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{command:+$command }}${{COMP_WORDS[i]}}"
        case "$word" in
            {paths}) command=$word ;;
        esac
    done
    case "$command" in
{chr(10).join(cases)}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _costcalc costcalc
"""


def _bash_reply(values: tuple[str, ...]) -> str:
    if not values:
        return "COMPREPLY=()"
    if values == (FILES,):
        return 'COMPREPLY=($(compgen -f -- "$cur"))'
    return f'COMPREPLY=($(compgen -W "{_words(values)}" -- "$cur"))'


def _by_values(options: tuple[Option, ...]) -> dict[tuple[str, ...], list[str]]:
    """The names of the options that take a value, grouped by what the value completes to."""
    grouped: dict[tuple[str, ...], list[str]] = {}
    for option in options:
        if option.values is not None:
            grouped.setdefault(option.values, []).extend(option.names)
    return grouped


def _names() -> tuple[str, str]:
    """The preset names and the GPU names, each as one line of words."""
    from costcalc.gpus import catalogue
    from costcalc.presets import preset_names

    return " ".join(preset_names()), " ".join(catalogue())


def zsh_script(commands: list[CommandWords]) -> str:
    """A completion function (``#compdef costcalc``): loaded from ``$fpath`` by compinit, or
    sourced (then it registers itself with compdef)."""
    from costcalc import __version__

    paths = "|".join(f'"{c.path}"' for c in commands if c.path)
    cases = _cases(commands, "({})", _zsh_reply, lambda words: f"compadd -- {_zsh_words(words)}")
    presets, gpus = _names()
    return f"""#compdef costcalc
# zsh completion for costcalc {__version__}, generated by `costcalc completion zsh`
_costcalc() {{
    local cur=${{words[CURRENT]}} prev=${{words[CURRENT-1]}}
    local -a presets gpus
    presets=({presets})
    gpus=({gpus})
    local command="" word i
    for ((i = 2; i < CURRENT; i++)); do
        word="${{command:+$command }}${{words[i]}}"
        case "$word" in
            ({paths}) command=$word ;;
        esac
    done
    case "$command" in
{chr(10).join(cases)}
    esac
}}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _costcalc "$@"
else
    compdef _costcalc costcalc
fi
"""


def _zsh_reply(values: tuple[str, ...]) -> str:
    if not values:
        return ":"
    return "_files" if values == (FILES,) else f"compadd -- {_zsh_words(values)}"


def _zsh_words(values: tuple[str, ...]) -> str:
    return " ".join({PRESETS: "$presets[@]", GPUS: "$gpus[@]"}.get(v, v) for v in values)


def fish_script(commands: list[CommandWords]) -> str:
    """``complete`` lines, each under the condition that its command has been typed."""
    from costcalc import __version__

    lines = [
        f"# fish completion for costcalc {__version__}, generated by `costcalc completion fish`",
        "complete -c costcalc -f",
    ]
    by_path = {c.path: c for c in commands}
    for command in commands:
        condition = _fish_condition(command.path, by_path)
        for name in command.subcommands:
            summary = by_path[f"{command.path} {name}".strip()].summary
            lines.append(
                f"complete -c costcalc -n {condition} -a {_fish_quote(name)} "
                f"-d {_fish_quote(summary)}"
            )
        for option in command.options:
            flags = " ".join(f"-s {n[1:]}" if len(n) == 2 else f"-l {n[2:]}" for n in option.names)
            values = _fish_values(option.values)
            lines.append(f"complete -c costcalc -n {condition} {flags}{values}")
        if command.arguments:
            lines.append(f"complete -c costcalc -n {condition}{_fish_values(command.arguments)}")
    return "\n".join(lines) + "\n"


def _fish_condition(path: str, by_path: dict[str, CommandWords]) -> str:
    """Fish's test that ``path`` is the command typed: its words seen, and none of its
    subcommands."""
    if not path:
        return "__fish_use_subcommand"
    tests = [f"__fish_seen_subcommand_from {word}" for word in path.split()]
    below = by_path[path].subcommands
    if below:
        tests.append(f"not __fish_seen_subcommand_from {' '.join(below)}")
    return _fish_quote("; and ".join(tests))


def _fish_values(values: tuple[str, ...] | None) -> str:
    if values is None:
        return ""
    if values == (FILES,):
        return " -r -F"
    if not values:
        return " -r"
    presets, gpus = _names()
    words = " ".join({PRESETS: presets, GPUS: gpus}.get(v, v) for v in values)
    return f" -x -a {_fish_quote(words)}"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
