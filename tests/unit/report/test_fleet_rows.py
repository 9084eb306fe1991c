"""A fleet run's report in each form: the hosts and each cost's spread, from a
document a real three-host fleet run printed here (namespace hosts, quick suite)."""

from __future__ import annotations

import io
import json
from html.parser import HTMLParser

from rich.console import Console

from cryptbench.model.result import Document
from cryptbench.report import export_html, export_markdown, screens
from tests.support.paths import TESTS

DOC = json.loads((TESTS / "fixtures" / "documents" / "fleet-three-hosts.json").read_text())
MODEL = Document.from_json(DOC)


def _cells(html: str, section: str) -> list[list[str]]:
    """The text of every row's cells inside <section id=section>."""

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.depth, self.rows, self.cell = 0, [], None  # type: ignore[var-annotated]

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "section":
                self.depth += 1 if self.depth or ("id", section) in attrs else 0
            if self.depth and tag == "tr":
                self.rows.append([])
            if self.depth and tag == "td":
                self.cell = ""

        def handle_endtag(self, tag: str) -> None:
            if tag == "section" and self.depth:
                self.depth -= 1
            if self.depth and tag == "td" and self.cell is not None:
                self.rows[-1].append(self.cell)
                self.cell = None

        def handle_data(self, data: str) -> None:
            if self.cell is not None:
                self.cell += data

    parser = Rows()
    parser.feed(html)
    return [r for r in parser.rows if r]


def test_the_fixture_is_a_fleet_of_three() -> None:
    assert [h["name"] for h in DOC["fleet"]["hosts"]] == ["h1", "h2", "h3"]
    assert all(h["status"] == "ok" for h in DOC["fleet"]["hosts"])
    assert len(DOC["fleet"]["costs"]) == len(DOC["plan"]["workloads"])  # fscrypt, per workload


def test_html_has_the_hosts_and_every_spread_row() -> None:
    html = export_html.render(MODEL, [])
    assert 'href="#fleet"' in html
    rows = _cells(html, "fleet")
    hosts = [r for r in rows if len(r) == 7]
    spread = [r for r in rows if len(r) == 8]
    assert [r[0] for r in hosts] == ["h1", "h2", "h3"] and all(r[2] == "ok" for r in hosts)
    assert len(spread) == len(DOC["fleet"]["costs"])
    for r, o in zip(spread, DOC["fleet"]["costs"], strict=True):
        # a change in speed, as every figure: negative when slower, signed
        assert r[0] == o["workload"] and r[3] == f"{o['median']:+.0f}%" and o["median"] < 0
        assert r[6].startswith(f"{o['worst_host']} {o['worst']:+.0f}%")


def test_markdown_and_terminal_show_the_spread() -> None:
    text = export_markdown.render(MODEL)
    spread = [line for line in text.splitlines() if line.startswith("| ") and "fscrypt vs ext4-loop" in line]
    assert len(spread) == len(DOC["fleet"]["costs"])
    assert all(line.count("|") == 9 for line in spread)
    out = io.StringIO()
    screens.render(MODEL, Console(file=out, width=200, color_system=None), details=True)
    shown = out.getvalue()
    assert "Fleet: hosts" in shown and "stands out" in shown
    assert all(o["worst_host"] in shown for o in DOC["fleet"]["costs"])


def test_a_failed_host_reads_as_failed_with_its_reason() -> None:
    doc = json.loads(json.dumps(DOC))
    doc["fleet"]["hosts"][1].update(status="failed", reason="client: host=198.18.0.6 disconnected [x]")
    rows = _cells(export_html.render(Document.from_json(doc), []), "fleet")
    assert rows[1][2] == "failed: client: host=198.18.0.6 disconnected [x]"
    out = io.StringIO()
    screens.render(Document.from_json(doc), Console(file=out, width=200, color_system=None))
    assert "failed: client: host=198.18.0.6 disconnected [x]" in out.getvalue()
