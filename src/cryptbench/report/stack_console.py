"""`cryptbench stack` in the terminal: the answer first (whether anything under the path
encrypts, and what a run's plain then is), then each layer indented under the one it
is on, with what the kernel shows of it, then what could not be read."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from cryptbench.model.stack import Stack

INDENT = "  "  # per layer of depth


def answer(stack: Stack) -> str:
    """One sentence: which layers encrypt what is under the path, or that none does."""
    layers = stack.encrypting
    if layers:
        named = " and ".join(layer.short() for layer in layers)
        return (
            f"{stack.path} is encrypted by {named}: a run with its scratch space here "
            "measures what a layer adds to it, and its plain target is encrypted."
        )
    undecided = stack.undecided()
    if undecided:
        names = ", ".join(layer.short() for layer in undecided)
        return f"Whether {stack.path} is encrypted cannot be told here: {names} may encrypt."
    return f"Nothing under {stack.path} encrypts: a run's plain target here is plain."


def render(stack: Stack, out: Console) -> None:
    out.print(Text(answer(stack), style="bold"))
    out.print(Text(f"{stack.path}: {stack.line()}"))
    out.print()
    for layer in stack.layers:
        pad = INDENT * layer.depth
        mark = {True: " [green]encrypts[/green]", False: "", None: " [yellow]may encrypt[/yellow]"}
        out.print(f"{pad}[bold]{escape(layer.kind)}[/bold] {escape(layer.name)}{mark[layer.encrypted]}")
        for label, value in layer.details:
            out.print(f"{pad}{INDENT}{escape(label)}: {escape(value)}", highlight=False)
    if stack.notes:
        out.print()
        out.print("[bold]Not read[/bold]")
        for note in stack.notes:
            out.print(f"{INDENT}{escape(note)}", highlight=False)
