"""`cryptbench compare`: ratios, significance and comparability on recorded runs.

B is made from a recorded document by changing its samples or conditions, so
each test knows the answer: the statistics themselves are SciPy's, run for real.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import statistics
from typing import Any

import pytest
from scipy import stats as sps

from cryptbench.analysis.run_comparison import Row, compare, mann_whitney_possible
from cryptbench.model.errors import UsageError
from cryptbench.model.result import Document
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.report import charts, compare_cells, compare_console, export_compare_html
from cryptbench.stats import estimates
from tests.support.bootstrap_oracle import exact_distribution, quantile, ratio_of_medians
from tests.support.html_page import Page
from tests.support.paths import TESTS

DOC = json.loads((TESTS / "fixtures" / "documents" / "quick-fscrypt-gocryptfs-ram.json").read_text())


def _scaled(doc: dict[str, Any], factor: float, run_id: int = 99) -> dict[str, Any]:
    """The same run with every sample of every result multiplied by `factor` (medians and
    intervals follow, as the document would have them)."""
    out = copy.deepcopy(doc)
    out["run_id"] = run_id
    for r in out["results"]:
        r["samples"] = [v * factor for v in r["samples"]]
        s = estimates.summarize(r["samples"])
        r.update(n=s.n, median=s.median, ci_low=s.ci_low, ci_high=s.ci_high)
    return out


def _row(comp: Any, workload: str, target: str) -> Row:
    return next(r for r in comp.rows if (r.workload, r.target) == (workload, target))


def _compare(a: dict[str, Any], b: dict[str, Any], **kw: Any) -> Any:
    return compare(Document.from_json(a), Document.from_json(b), db_a="a.db", db_b="b.db", **kw)


def test_ratio_is_b_speed_over_a_for_every_workload_and_target() -> None:
    comp = _compare(DOC, _scaled(DOC, 2.0))
    pairs = {(r["workload"], r["target"]) for r in DOC["results"]}
    assert {(r.workload, r.target) for r in comp.rows} == pairs
    for r in comp.rows:
        assert r.metric == DOC["plan"]["primary_metrics"].get(r.workload, "throughput")
        assert r.ratio == pytest.approx(2.0)
        assert r.b_median == pytest.approx(2 * r.a_median)
        assert r.change().startswith("+100% [")
    assert not comp.differences and not comp.forced


def test_a_time_metric_is_turned_into_speed() -> None:
    # Twice the latency is half the speed: B is 50 % slower, its ratio 0.5.
    comp = _compare(DOC, _scaled(DOC, 2.0), metric="lat_p99")
    assert {r.metric for r in comp.rows} == {"lat_p99"}
    for r in comp.rows:
        assert r.ratio == pytest.approx(0.5)
        assert r.change().startswith("-50% [") == (r.b_low is not None)
    # fio's p99 comes from buckets: where every trial read one (ram:fscrypt's, in this
    # recorded run), so does every one of its double, and the change has no interval
    (same,) = [r for r in comp.rows if r.b_low is None]
    assert (same.target, same.change()) == ("ram:fscrypt", "-50% (no interval)")


def test_ratio_and_interval_are_the_bootstrap_of_the_two_sample_sets() -> None:
    b = _scaled(DOC, 1.0)
    for r in b["results"]:
        if (r["workload"], r["target"], r["metric"]) == ("seq1m-q8-read", "gocryptfs", "throughput"):
            r["samples"] = [v * f for v, f in zip(r["samples"], (0.7, 0.9, 1.1), strict=True)]
    row = _row(_compare(DOC, b), "seq1m-q8-read", "gocryptfs")
    a_s = next(
        r["samples"]
        for r in DOC["results"]
        if (r["workload"], r["target"], r["metric"]) == ("seq1m-q8-read", "gocryptfs", "throughput")
    )
    b_s = [v * f for v, f in zip(a_s, (0.7, 0.9, 1.1), strict=True)]
    assert row.ratio == pytest.approx(statistics.median(b_s) / statistics.median(a_s))
    assert row.ratio_low is not None and row.ratio_high is not None
    # against every resample of both sides enumerated, not against SciPy again
    exact = exact_distribution([b_s, a_s], ratio_of_medians)
    assert quantile(exact, 0.015) <= row.ratio_low <= quantile(exact, 0.035)
    assert quantile(exact, 0.965) <= row.ratio_high <= quantile(exact, 0.985)


@pytest.mark.parametrize(
    ("n_a", "n_b", "possible"),
    [(2, 2, False), (3, 3, False), (3, 4, False), (4, 4, True), (3, 5, True), (2, 7, False), (2, 8, True)],
)
def test_mann_whitney_only_where_it_can_reach_five_percent(n_a: int, n_b: int, possible: bool) -> None:
    assert mann_whitney_possible(n_a, n_b) is possible
    # SciPy's own exact p for the most extreme outcome (every B above every A) agrees.
    p = sps.mannwhitneyu(list(range(10, 10 + n_b)), list(range(n_a)), alternative="two-sided").pvalue
    assert bool(p < 0.05) is possible


def _with_samples(doc: dict[str, Any], key: tuple[str, str], values: list[float]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for r in out["results"]:
        if (r["workload"], r["target"]) == key and r["metric"] == "throughput":
            s = estimates.summarize(values)
            r.update(samples=values, n=s.n, median=s.median, ci_low=s.ci_low, ci_high=s.ci_high)
    return out


def test_significance_by_mann_whitney_with_enough_trials() -> None:
    key = ("seq1m-q8-write", "fscrypt")
    a = _with_samples(DOC, key, [100.0, 101.0, 102.0, 103.0, 104.0])
    b = _with_samples(_scaled(DOC, 1.0), key, [110.0, 111.0, 112.0, 113.0, 114.0])
    row = _row(_compare(a, b), *key)
    assert row.test == "mann-whitney"
    assert row.p_value == pytest.approx(2 / math.comb(10, 5))  # exact: the most extreme of 252 orders
    assert row.significant and "p = 0.008" in row.evidence()
    same = _with_samples(_scaled(DOC, 1.0), key, [100.5, 101.5, 102.5, 103.5, 99.0])
    row = _row(_compare(a, same), *key)
    assert row.test == "mann-whitney" and row.p_value > 0.05 and row.significant is False


def test_significance_by_intervals_with_three_trials() -> None:
    comp = _compare(DOC, _scaled(DOC, 2.0))
    for r in comp.rows:
        assert r.a_n == 3 and r.test == "intervals"
        disjoint = r.a_high < r.b_low or r.b_high < r.a_low  # type: ignore[operator]
        assert r.significant is disjoint
    assert comp.counts()["faster"] == sum(1 for r in comp.rows if r.significant)
    same = _compare(DOC, _scaled(DOC, 1.0))
    assert all(r.significant is False for r in same.rows)
    assert same.counts() == {"faster": 0, "slower": 0, "unclear": len(same.rows)}


def test_one_trial_a_side_cannot_be_told() -> None:
    key = ("seq1m-q8-read", "plain")
    row = _row(_compare(DOC, _with_samples(_scaled(DOC, 1.0), key, [5e8])), *key)
    assert row.test == "none" and row.significant is None and row.ratio_low is None
    assert "cannot tell" in row.evidence() and row.change().endswith("(no interval)")


def test_the_change_is_written_as_every_figure_is() -> None:
    def row(ratio: float, low: float | None, high: float | None) -> Row:
        return Row("w", "t", "throughput", "bytes/s", True, 3, 1, None, None, 3, 1, None, None, ratio, low,
                   high, "intervals", None, True)  # fmt: skip

    # a change in speed, negative when slower, with both ends of its lopsided interval; no *:
    # compare's significance is its test's, in a column of its own
    assert row(0.5, 0.4, 0.625).change() == "-50% [-60, -38]"
    assert row(1.5, 1.4, 1.8).change() == "+50% [+40, +80]"
    assert row(1.001, 0.98, 1.02).change() == "+0% [-2, +2]"
    assert row(1.5, None, None).change() == "+50% (no interval)"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["plan"].update(size=d["plan"]["size"] * 2), "data per trial"),
        (lambda d: d["plan"].update(data="zero"), "write buffers"),
        (
            lambda d: d["plan"]["workload_specs"]["rnd4k-q1-read"].update(iodepth=2),
            "rnd4k-q1-read: definition",
        ),
        (lambda d: d["targets"][1].update(io_mode="direct"), ": I/O mode"),
        (lambda d: d["targets"][1]["details"].update(policy="v1"), ": policy"),
        (lambda d: d["environment"].update(cache_drop="none"), "cache drop"),
        (lambda d: d["environment"].update(ioengine="libaio"), "fio ioengine"),
    ],
)
def test_runs_that_measured_different_things_are_refused_unless_forced(change: Any, words: str) -> None:
    b = _scaled(DOC, 1.0)
    change(b)
    with pytest.raises(UsageError, match=f"did not measure the same things: .*{words}.*--force"):
        _compare(DOC, b)
    forced = _compare(DOC, b, force=True)
    assert forced.forced and any(words in d.words() for d in forced.blocking)


def test_a_forced_comparison_says_so_on_its_page() -> None:
    b = _scaled(DOC, 1.0)
    b["plan"]["size"] *= 2
    forced = _compare(DOC, b, force=True)
    html = export_compare_html.render(
        forced,
        Document.from_json(DOC),
        Document.from_json(b),
        charts.comparison_chart(forced.rows, {}, 1, 99),
    )
    assert "compared with --force" in html and "data per trial" in html


def test_host_kernel_and_versions_are_listed_not_refused() -> None:
    b = _scaled(DOC, 1.0)
    b["environment"].update(hostname="other", kernel="6.1.0")
    b["tool_version"] = "0.2.0"
    b["plan"]["repeats"] = None
    for t in b["targets"]:
        t["details"]["loop_device"] = "/dev/loop9"  # differs every run: not a different stack
        # the table line names the loop device (7:9), and a run stored before it was kept has none
        t["details"]["dm_table"] = "0 98304 crypt aes-xts-plain64 - 0 7:9 32768 1 sector_size:4096"
    comp = _compare(DOC, b)
    assert not comp.forced
    assert {d.what for d in comp.differences} == {"host", "kernel", "cryptbench", "repeats"}
    assert all(not d.blocking for d in comp.differences)


def test_only_what_both_measured_is_compared() -> None:
    b = _scaled(DOC, 1.0)
    b["targets"] = [t for t in b["targets"] if t["name"] != "gocryptfs"]
    b["results"] = [r for r in b["results"] if r["target"] != "gocryptfs"]
    b["results"] = [
        r for r in b["results"] if not (r["target"] == "fscrypt" and r["workload"] == "rnd4k-q1-read")
    ]
    comp = _compare(DOC, b)
    assert "gocryptfs" not in {r.target for r in comp.rows}
    assert ("rnd4k-q1-read", "fscrypt") not in {(r.workload, r.target) for r in comp.rows}
    assert comp.only_in_a == ["target gocryptfs", "rnd4k-q1-read on fscrypt"] and comp.only_in_b == []


def test_nothing_in_common_is_an_error() -> None:
    b = _scaled(DOC, 1.0)
    b["plan"]["workloads"] = ["something-else"]
    with pytest.raises(UsageError, match="no workload in common"):
        _compare(DOC, b)


def test_each_encrypted_target_against_its_baseline_side_by_side_as_a_change_in_speed() -> None:
    b = copy.deepcopy(DOC)
    b["run_id"] = 99
    comp = _compare(DOC, b)
    encrypted = {t["name"] for t in DOC["targets"] if t["encrypted"]}
    want = [c for c in DOC["comparisons"] if c["kind"] == "baseline" and c["target"] in encrypted]
    assert len(comp.costs) == len(want)
    for o, c in zip(comp.costs, want, strict=True):
        assert o.a == pytest.approx(c["change_percent"]) and o.b == o.a and not o.changed
        assert o.a == pytest.approx((c["ratio"] - 1) * 100)  # negative when slower
        assert o.a_interval == pytest.approx(((c["ci_low"] - 1) * 100, (c["ci_high"] - 1) * 100))
    moved = next(c for c in b["comparisons"] if c["target"] == "fscrypt" and c["kind"] == "baseline")
    moved.update(ratio=0.999, ci_low=0.998, ci_high=1.0)  # fscrypt now costs nothing there
    changed = _compare(DOC, b).costs
    assert [o.target for o in changed if o.changed] == ["fscrypt"]


def test_html_page_has_every_section_and_one_row_per_pair() -> None:
    b = _scaled(DOC, 1.25)
    b["suite"] = "<b>quick</b>"
    comp = _compare(DOC, b)
    chart = charts.comparison_chart(comp.rows, charts.colours(Document.from_json(DOC)), 1, 99)
    html = export_compare_html.render(comp, Document.from_json(DOC), Document.from_json(b), chart)
    page = Page()
    page.feed(html)
    assert page.sections == ["summary", "runs", "comparison", "changes", "costs"]
    assert [row[:2] for row in page.rows["comparison-table"]] == [[r.workload, r.target] for r in comp.rows]
    assert len(page.rows["cost-table"]) == len(comp.costs)
    assert page.charts == ["comparison"] and page.svgs == 1
    assert not page.external and not page.tags & {"script", "link", "img", "iframe"}
    assert "<b>quick</b>" not in html and "&lt;b&gt;quick&lt;/b&gt;" in html  # suite names are text
    assert comp.summary() in html


def test_terminal_and_json_say_the_same() -> None:
    from io import StringIO

    from rich.console import Console

    comp = _compare(DOC, _scaled(DOC, 0.5))
    buf = StringIO()
    compare_console.render(comp, Console(file=buf, width=200))
    text = buf.getvalue()
    assert comp.summary() in text.replace("\n", " ")
    assert text.count("-50% [") == len(comp.rows)
    data = json.loads(json.dumps(comp.to_json()))
    assert data["counts"] == comp.counts() and len(data["rows"]) == len(comp.rows)
    assert data["rows"][0]["words"] == comp.rows[0].change()


def test_terminal_at_80_columns_keeps_every_figure_whole() -> None:
    from io import StringIO

    from rich.console import Console

    comp = _compare(DOC, _scaled(DOC, 0.5))
    buf = StringIO()
    compare_console.render(comp, Console(file=buf, width=80))
    lines = buf.getvalue().splitlines()
    assert max(map(len, lines)) <= 80 and not any("…" in line for line in lines)
    text = buf.getvalue()
    for r in comp.rows:
        assert r.change() in text  # "-50% [-62, -31]", on one line each
    for o in compare_cells.cost_cells(comp):
        assert o.a in text and o.b in text


def test_a_backend_program_s_version_is_listed_not_refused() -> None:
    a, b = _scaled(DOC, 1.0, run_id=1), _scaled(DOC, 1.0)
    a["environment"]["versions"] = {"gocryptfs": "gocryptfs v2.3.0", "cryfs": "cryfs 0.11.3"}
    b["environment"]["versions"] = {"gocryptfs": "gocryptfs v2.4.0", "cryfs": "cryfs 0.11.3"}
    comp = _compare(a, b)
    assert [(d.what, d.a, d.b, d.blocking) for d in comp.differences] == [
        ("gocryptfs's version", "gocryptfs v2.3.0", "gocryptfs v2.4.0", False)
    ]


def _with_stack(doc: dict[str, Any], *layers: Layer) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["environment"]["stack"] = Stack("/var/tmp", layers).to_json()
    return out


def test_runs_whose_scratch_space_differs_in_encryption_are_refused() -> None:
    """A plain target on dm-crypt is not the plain of a run on a bare disk: comparing them
    compares what neither measured. The rest of the stack is listed, not refused."""
    ext4, disk = Layer(LayerKind.FILESYSTEM, "ext4", False, 0), Layer(LayerKind.DISK, "vda", False, 1)
    crypt = Layer(LayerKind.DM_CRYPT, "dm-0 (root)", True, 1, (("cipher", "aes-xts-plain64"),))
    bare = _with_stack(DOC, ext4, disk)
    on_luks = _with_stack(_scaled(DOC, 1.0), ext4, crypt, dataclasses.replace(disk, depth=2))
    with pytest.raises(UsageError, match=r"encryption under the scratch space.*--force"):
        _compare(bare, on_luks)
    forced = _compare(bare, on_luks, force=True)
    (said,) = [d for d in forced.blocking if "encryption under" in d.words()]
    assert (said.a, said.b) == ("none", "dm-crypt (aes-xts-plain64)")
    other_disk = _with_stack(_scaled(DOC, 1.0), ext4, dataclasses.replace(disk, name="vdb"))
    listed = _compare(bare, other_disk)
    assert not listed.blocking
    assert any("stack under the scratch space" in d.words() for d in listed.differences)
    assert not any("stack" in d.words() for d in _compare(DOC, _scaled(DOC, 1.0)).differences)
