"""Shell completion for bash, zsh and fish, and the man page, generated from the command
line's own parser (cryptbench.cli), so that they can never list a flag the tool lacks.

bash and zsh come from shtab; fish, which shtab does not write, from the parser directly
(its `complete` lines); the man page from argparse-manpage. `make setup` runs

    .venv/bin/python scripts/shell_integration.py build/shell --install

which writes the four files under build/shell/ and, with --install (as root), copies
them where bash-completion, zsh, fish and man look: nothing else on the machine changes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import shtab
from build_manpages.manpage import Manpage

from cryptbench import __version__
from cryptbench.cli import _parser

# Where each file goes on a Debian system (the packages' own search paths).
INSTALLED = {
    "cryptbench.bash": Path("/usr/share/bash-completion/completions/cryptbench"),
    "_cryptbench": Path("/usr/local/share/zsh/site-functions/_cryptbench"),
    "cryptbench.fish": Path("/usr/share/fish/vendor_completions.d/cryptbench.fish"),
    "cryptbench.1": Path("/usr/local/share/man/man1/cryptbench.1"),
}


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _helps(p: argparse.ArgumentParser) -> dict[str, str]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return {c.dest: c.help or "" for c in a._choices_actions}
    return {}


def fish(parser: argparse.ArgumentParser) -> str:
    """fish's `complete` lines: the commands (a fleet's own under it), then each one's flags."""
    prog = parser.prog
    lines = [f"# fish completion for {prog}, generated from its parser (scripts/shell_integration.py)"]
    lines.append(f"complete -c {prog} -f")
    commands = _subparsers(parser)
    helps = _helps(parser)
    names = " ".join(commands)
    for name in commands:
        first = f"not __fish_seen_subcommand_from {names}"
        lines.append(f"complete -c {prog} -n '{first}' -a {name} -d {_quoted(helps[name])}")
    for name, sub in commands.items():
        seen = f"__fish_seen_subcommand_from {name}"
        for inner, inner_help in _helps(sub).items():
            lines.append(f"complete -c {prog} -n '{seen}' -a {inner} -d {_quoted(inner_help)}")
        for action in sub._actions:
            flags = [s for s in action.option_strings if s.startswith("--")]
            short = [s for s in action.option_strings if len(s) == 2 and s[0] == "-" and s[1] != "-"]
            if not flags and not short:
                continue
            opts = "".join(f" -l {f[2:]}" for f in flags) + "".join(f" -s {s[1]}" for s in short)
            takes = " -r" if action.nargs != 0 else ""
            choices = f" -a {_quoted(' '.join(map(str, action.choices)))}" if action.choices else ""
            text = (action.help or "").replace("%%", "%")
            lines.append(f"complete -c {prog} -n '{seen}'{opts}{takes}{choices} -d {_quoted(text[:80])}")
    return "\n".join(lines) + "\n"


def manpage(parser: argparse.ArgumentParser) -> str:
    data = {"project_name": "cryptbench", "version": __version__, "description": parser.description}
    return str(Manpage(parser, _data=data))


def build(out: Path) -> dict[str, Path]:
    """The four files under `out`, by their installed names."""
    parser = _parser()
    out.mkdir(parents=True, exist_ok=True)
    texts = {
        "cryptbench.bash": shtab.complete(parser, shell="bash"),
        "_cryptbench": shtab.complete(parser, shell="zsh"),
        "cryptbench.fish": fish(parser),
        "cryptbench.1": manpage(parser),
    }
    written = {}
    for name, text in texts.items():
        path = out / name
        path.write_text(text)
        written[name] = path
    return written


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="where to write the four files")
    p.add_argument("--install", action="store_true", help="also copy them where the shells and man look")
    args = p.parse_args()
    written = build(args.out)
    if args.install:
        for name, path in written.items():
            INSTALLED[name].parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, INSTALLED[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
