"""The report's charts draw the document's own figures (recorded runs, see
tests/fixtures/documents/ and tests/fixtures/timelines/)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from matplotlib.container import BarContainer

from cryptbench.analysis.speed_change import speed_change
from cryptbench.measure.cpu_timeline import CpuTimeline
from cryptbench.model.result import Document
from cryptbench.report import charts
from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures"


def _doc(name: str) -> Document:
    return Document.from_json(json.loads((FIXTURES / "documents" / f"{name}.json").read_text()))


def _timelines(name: str) -> list[charts.TrialTimeline]:
    return [
        charts.TrialTimeline(t["target"], t["workload"], CpuTimeline.from_json(t["timeline"]))
        for t in json.loads((FIXTURES / "timelines" / f"{name}.json").read_text())
    ]


@pytest.fixture(scope="module")
def ram_doc() -> Document:
    return _doc("quick-fscrypt-gocryptfs-ram")


def _bars(chart: charts.Chart) -> dict[str, list[float]]:
    ax = chart.figure.axes[0]
    return {
        c.get_label(): [p.get_height() for p in c.patches]
        for c in ax.containers
        if isinstance(c, BarContainer)
    }


def test_one_bar_chart_per_family_and_medium(ram_doc: Document) -> None:
    made = charts.bar_charts(ram_doc)
    assert [c.name for c in made] == [
        "bars-sequential-1m-device",
        "bars-sequential-1m-ram",
        "bars-random-4k-device",
        "bars-random-4k-ram",
    ]
    assert made[0].title == "Sequential 1 MiB requests, on the device"


def test_bars_are_the_documents_medians_in_mb_per_s(ram_doc: Document) -> None:
    chart = charts.bar_charts(ram_doc)[2]  # random 4 KiB on the device
    medians = {(r.workload, r.target): r.median for r in ram_doc.results if r.metric == "throughput"}
    workloads = ["rnd4k-q32-read", "rnd4k-q32-write", "rnd4k-q1-read", "rnd4k-q1-write"]
    bars = _bars(chart)
    assert list(bars) == ["plain", "ext4-loop", "fscrypt", "gocryptfs"]
    for target, heights in bars.items():
        assert heights == pytest.approx([medians[(w, target)] / 1e6 for w in workloads])
    assert "MB/s" in chart.figure.axes[0].get_ylabel()


def test_the_overhead_chart_draws_each_change_and_says_where_it_clips(ram_doc: Document) -> None:
    chart = charts.overhead_chart(ram_doc)
    assert chart is not None
    comps = [c for c in ram_doc.comparisons if c.kind == "baseline"]
    targets = list(dict.fromkeys(c.target for c in comps))
    assert [ax.get_title(loc="left").split(" against ")[0] for ax in chart.figure.axes] == targets
    for ax, target in zip(chart.figure.axes, targets, strict=True):
        widths = [p.get_width() for p in ax.patches]
        mine = [c for c in comps if c.target == target]
        assert widths == pytest.approx([min(speed_change(c)[0], charts.CLIP) for c in mine])
    clipped = [c for c in comps if speed_change(c)[1] and speed_change(c)[1][1] > charts.CLIP]
    labels = [t.get_text() for ax in chart.figure.axes for t in ax.texts]
    assert len(labels) == len(clipped) > 0  # this run has wide intervals: each is labelled, none silently cut
    assert f"→ {speed_change(clipped[0])[1][1]:+.0f} %" in labels


def test_latency_panels_per_workload_on_a_log_axis(ram_doc: Document) -> None:
    chart = charts.latency_chart(ram_doc)
    assert chart is not None
    panels = [ax for ax in chart.figure.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in panels] == ram_doc.plan.workloads
    assert all(ax.get_xscale() == "log" for ax in panels)
    p99 = {(r.workload, r.target): r.median for r in ram_doc.results if r.metric == "lat_p99"}
    xs = {x for line in panels[2].lines for x in line.get_xdata()}
    assert p99[("rnd4k-q32-read", "fscrypt")] * 1e3 in xs  # drawn in ms


def test_no_cpu_chart_without_timelines_and_no_file_size_chart_without_a_series(ram_doc: Document) -> None:
    made = charts.build(ram_doc, [])
    kinds = [c.kind for c in made]
    assert "cpu" not in kinds and "file-size" not in kinds
    assert kinds.count("overhead") == 1 and kinds.count("latency") == 1


def test_inline_svg_is_one_element_with_text_as_text(ram_doc: Document) -> None:
    chart = charts.overhead_chart(ram_doc)
    assert chart is not None
    svg = chart.svg()
    assert svg.startswith("<svg") and "<?xml" not in svg
    root = ET.fromstring(svg)
    texts = "".join(root.itertext())
    assert "fscrypt against ext4-loop" in texts  # searchable, not glyph paths
    assert chart.image("png").startswith(b"\x89PNG")


def test_charts_inlined_on_one_page_share_no_element_ids(ram_doc: Document) -> None:
    # clip paths and glyphs are referenced by id: a clash would draw one chart with another's
    ids: list[str] = []
    for chart in charts.build(ram_doc, []):
        svg = chart.svg()
        mine = [e.attrib["id"] for e in ET.fromstring(svg).iter() if "id" in e.attrib]
        refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', svg))
        assert refs and refs <= set(mine)  # every reference renamed with its target
        ids += mine
    assert len(ids) == len(set(ids)) > 0


@pytest.fixture(scope="module")
def series_doc() -> Document:
    return _doc("write-series-images")


def test_file_size_chart_draws_each_size_class(series_doc: Document) -> None:
    chart = charts.file_size_chart(series_doc)
    assert chart is not None
    writes, reads = chart.figure.axes
    assert (writes.get_title(loc="left"), reads.get_title(loc="left")) == ("writes", "reads")
    medians = {(r.target, r.metric): r.median for r in series_doc.results}
    line = next(ln for ln in writes.lines if ln.get_label() == "image-qcow2-aes256@fresh")
    assert list(line.get_xdata()) == [2 << 20, 4 << 20, 8 << 20]  # bytes, on a log2 axis
    assert list(line.get_ydata()) == pytest.approx(
        [medians[("image-qcow2-aes256@fresh", f"write-{m}m.throughput")] / 1e6 for m in (2, 4, 8)]
    )


def test_cpu_chart_puts_trials_back_to_back_with_their_helpers(series_doc: Document) -> None:
    timelines = _timelines("write-series-images")
    chart = charts.cpu_chart(series_doc, timelines)
    assert chart is not None
    ax, strip = chart.figure.axes
    lines = {ln.get_label(): ln for ln in ax.lines}
    assert set(lines) == {"system-wide", "helper qemu-storage-daemon", "all 2 cores"}
    total = sum(t.timeline.ends[-1] for t in timelines)
    xs = [x for x in lines["system-wide"].get_xdata() if x == x]  # without the NaN breaks
    assert max(xs) == pytest.approx(total)
    # the helper is drawn only during trials of the targets that run it
    helper_trials = [t for t in timelines if t.timeline.helpers]
    assert {t.target for t in helper_trials} == {
        "image-raw@fresh",
        "image-qcow2@fresh",
        "image-qcow2-aes256@fresh",
    }
    ys = [y for y in lines["helper qemu-storage-daemon"].get_ydata() if y == y]
    assert len(ys) == sum(len(t.timeline.ends) + 1 for t in helper_trials)
    assert len(strip.collections) == len(timelines)  # one block per trial in the strip


def test_an_interval_that_misses_the_median_is_drawn_as_it_is(ram_doc: Document) -> None:
    # With two or three trials a percentile bootstrap interval can lie wholly above the median
    # (seen in a real run): the whisker spans the interval, it is not an offset from the median.
    doc = json.loads(json.dumps(ram_doc.to_json()))
    r = next(
        r
        for r in doc["results"]
        if (r["workload"], r["target"], r["metric"]) == ("rnd4k-q1-read", "plain", "throughput")
    )
    r["ci_low"], r["ci_high"] = r["median"] * 1.1, r["median"] * 1.3
    c = next(
        c
        for c in doc["comparisons"]
        if (c["workload"], c["target"], c["kind"]) == ("rnd4k-q1-read", "fscrypt", "baseline")
    )
    c["ci_low"], c["ci_high"] = c["ratio"] * 1.05, c["ratio"] * 1.2
    bars = charts.bar_charts(Document.from_json(doc))[2].figure.axes[0]
    segments = [seg for coll in bars.collections for seg in coll.get_segments()]
    assert any(
        seg[0][1] == pytest.approx(r["ci_low"] / 1e6) and seg[1][1] == pytest.approx(r["ci_high"] / 1e6)
        for seg in segments
    )
    overhead = charts.overhead_chart(Document.from_json(doc))
    assert overhead is not None
    fscrypt = next(ax for ax in overhead.figure.axes if ax.get_title(loc="left").startswith("fscrypt "))
    ends = {
        tuple(sorted((seg[0][0], seg[1][0]))) for coll in fscrypt.collections for seg in coll.get_segments()
    }
    want = ((c["ci_low"] - 1) * 100, (c["ci_high"] - 1) * 100)
    assert any(lo == pytest.approx(want[0]) and hi == pytest.approx(want[1]) for lo, hi in ends)
