"""Every output of a run whose scratch space is already encrypted says so before its
answer, in the same words, and names the stack under its header; a run on a bare disk
says the stack only, and a run stored before runs kept their stack says neither. The
documents are recorded runs (tests/fixtures/documents) with a stack put in."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

from cryptbench.model.result import Document
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.report import export_html, export_markdown, screens
from tests.support.paths import TESTS

DOC = json.loads((TESTS / "fixtures" / "documents" / "default-run.json").read_text())
SAID = (
    "Your scratch space is on dm-crypt (aes-xts-plain64, 512-bit key): plain here is encrypted; "
    "each figure is the cost of adding a layer to it."
)
ON_LUKS = Stack(
    "/var/tmp",
    (
        Layer(LayerKind.FILESYSTEM, "ext4", False, 0),
        Layer(
            LayerKind.DM_CRYPT,
            "dm-0 (root)",
            True,
            1,
            (("cipher", "aes-xts-plain64"), ("key", "512-bit key")),
        ),
        Layer(LayerKind.PARTITION, "nvme0n1p3", False, 2),
        Layer(LayerKind.DISK, "nvme0n1", False, 3),
    ),
)
BARE = Stack(
    "/var/tmp", (Layer(LayerKind.FILESYSTEM, "ext4", False, 0), Layer(LayerKind.DISK, "vda", False, 1))
)


def _doc(stack: Stack | None) -> Document:
    raw: dict[str, Any] = json.loads(json.dumps(DOC))
    if stack is not None:
        raw["environment"]["stack"] = stack.to_json()
        # the disk the run counted is the stack's (measure/environment.py)
        raw["environment"]["scratch_device"] = raw["device_writes"]["device"] = "+".join(stack.disks)
    return Document.from_json(raw)


def _screen(doc: Document, **kw: bool) -> str:
    out = io.StringIO()
    screens.render(doc, Console(file=out, width=200, color_system=None), **kw)
    return out.getvalue()


@pytest.mark.parametrize("details", [False, True])
def test_the_screen_says_it_under_the_header_and_before_the_ranking(details: bool) -> None:
    lines = _screen(_doc(ON_LUKS), details=details).splitlines()
    assert lines[0].startswith(f"Run {DOC['run_id']} ")
    assert (
        lines[1]
        == "Scratch space /var/tmp: ext4 on dm-crypt (aes-xts-plain64, 512-bit key) on nvme0n1p3 on nvme0n1"
    )
    assert lines[2] == SAID
    bare = _screen(_doc(BARE), details=details).splitlines()
    assert bare[1] == "Scratch space /var/tmp: ext4 on vda" and SAID not in "\n".join(bare)
    before = _screen(_doc(None), details=details).splitlines()
    assert not before[1].startswith("Scratch space") and before[1] == bare[2]


def test_the_answer_alone_opens_with_it() -> None:
    assert _screen(_doc(ON_LUKS), quiet=True).splitlines()[0] == SAID
    assert _screen(_doc(BARE), quiet=True) == _screen(_doc(None), quiet=True)


def test_markdown_and_the_page_say_it_too() -> None:
    md = export_markdown.render(_doc(ON_LUKS)).splitlines()
    assert (
        md[1]
        == "Scratch space /var/tmp: ext4 on dm-crypt (aes-xts-plain64, 512-bit key) on nvme0n1p3 on nvme0n1."
    )
    assert md[2] == f"**{SAID}**"
    assert export_markdown.render(_doc(None)).splitlines()[1] == ""
    page = export_html.render(_doc(ON_LUKS), [])
    verdict = page.split('<section id="ranking"', 1)[1]
    assert verdict.index(SAID) < verdict.index("</p>")  # the section's first sentence
    assert SAID not in export_html.render(_doc(BARE), [])


def test_the_details_name_the_layers_above_the_disk_that_wrote() -> None:
    text = " ".join(_screen(_doc(ON_LUKS), details=True).split())
    under = "the disk under ext4 on dm-crypt (aes-xts-plain64, 512-bit key) on nvme0n1p3 on nvme0n1"
    assert f"nvme0n1 wrote 4.9 GiB during the 132 trials (its own counter, {under}: what the layers" in text
    assert "(its own counter: what the layers added" in " ".join(_screen(_doc(None), details=True).split())
