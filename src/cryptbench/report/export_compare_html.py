"""`cryptbench compare A B --html FILE`: the comparison as one self-contained page,
in the same style as the run report (the templates share `base.html.j2`)."""

from __future__ import annotations

from cryptbench import __version__
from cryptbench.analysis.run_comparison import METHOD, Comparison
from cryptbench.model.result import Document
from cryptbench.report.compare_cells import cost_cells, row_cells
from cryptbench.report.pages import ENV, PageChart
from cryptbench.report.sentences import environment_rows


def run_rows(a: Document, b: Document) -> list[tuple[str, str, str, bool]]:
    """Each environment line of the two runs side by side, and whether they differ."""
    ra, rb = dict(environment_rows(a)), dict(environment_rows(b))
    labels = list(dict.fromkeys([*ra, *rb]))
    return [
        (k, ra.get(k, "-"), rb.get(k, "-"), ra.get(k) != rb.get(k))
        for k in labels
        if k != "seed"  # differs between any two runs, by design
    ]


def render(comp: Comparison, a: Document, b: Document, chart: PageChart) -> str:
    return ENV.get_template("compare.html.j2").render(
        tool_version=__version__,
        cmp=comp,
        a=a,
        b=b,
        runs=run_rows(a, b),
        chart={"name": chart.name, "title": chart.title, "caption": chart.caption, "svg": chart.svg()},
        rows=row_cells(comp),
        costs=cost_cells(comp),
        method=METHOD,
    )
