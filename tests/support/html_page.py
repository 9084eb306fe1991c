"""An HTML page read as a reader's browser sees it: its sections, charts, tables and
external references (the report's and compare's pages are checked through it)."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """What a reader's browser would see: section ids, charts, table rows, external references."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.charts: list[str] = []
        self.svgs = 0
        self.external: list[str] = []
        self.tags: set[str] = set()
        self.rows: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "section":
            self.sections.append(a["id"] or "")
        if tag == "figure" and a.get("data-chart"):
            self.charts.append(a["data-chart"] or "")
        if tag == "svg":
            self.svgs += 1
        for key in ("src", "href"):
            v = a.get(key) or ""
            if key in a and not v.startswith("#"):
                self.external.append(v)
        if tag == "table":
            self._table = a.get("id") or ""
        if tag == "tr" and self._table is not None:
            self._row = []
        if tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._table is not None and self._row:
            self.rows.setdefault(self._table, []).append(self._row)
            self._row = None
        if tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
