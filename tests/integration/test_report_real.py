"""`cryptbench report` on a real tiny run: the CSV read back by pandas agrees
with the run's own document; Markdown and JSON from the same store; the HTML
page opened in headless Chromium has every section and chart, and its
screenshots (phone and desktop width) are kept for a person to look at; chart
images; files are never overwritten."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import statistics
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from cryptbench.analysis import ranking
from cryptbench.commands import run as run_cmd
from cryptbench.commands import show
from cryptbench.model.result import Document
from cryptbench.planning.request import RunRequest
from cryptbench.report.protection_rows import cheapest_lines
from cryptbench.store.database import Store
from tests.support.cli import cli
from tests.support.html_page import Page
from tests.support.targets import need_backend, requires_root

pytestmark = pytest.mark.integration

SEQ_SUITE = Path(__file__).parent.parent / "fixtures" / "suites" / "seq.toml"
# Where the browser's screenshots stay after the test, for a person to look at (git ignores it).
SHOTS = Path(os.environ.get("CRYPTBENCH_TEST_OUTPUT", Path(__file__).parent.parent.parent / "test-output"))


@requires_root
def test_report_exports_a_real_run(target_dir: Path, tmp_path: Path) -> None:
    need_backend("fscrypt")
    db = tmp_path / "r.sqlite"
    outcome = run_cmd.run(
        RunRequest(
            backends="fscrypt,gocryptfs",
            suite=str(SEQ_SUITE),
            size="8M",
            repeats=2,
            seed=3,
            target=str(target_dir),
            db=db,
        )
    )
    assert outcome.status == "complete"
    doc = outcome.document.to_json()
    exports = tmp_path / "exports"
    exports.mkdir()
    _the_csv_reads_back_as_the_runs_own_figures(db, doc, exports)
    _the_summary_csv_is_the_documents_comparisons(db, doc)
    _the_document_validates_against_the_shipped_schema(db)
    _quiet_verbose_and_no_color(db)
    _an_existing_file_is_never_overwritten(db, exports)
    _markdown_and_json_come_from_the_same_store(db, doc)
    _chart_images_for_posts_and_slides(db, exports)
    _the_html_page_in_a_browser(db, doc, exports)
    _check_gates_on_the_worst_change(db, doc)


def _the_csv_reads_back_as_the_runs_own_figures(db: Path, doc: dict, exports: Path) -> None:
    out = exports / "run.csv"
    done = cli("report", "--db", str(db), "--csv", str(out))
    assert done.returncode == 0, done.stderr
    df = pd.read_csv(out)
    assert len(df) == doc["trials"]["ok"] + doc["trials"]["failed"]
    assert set(df["run_id"]) == {doc["run_id"]} and set(df["hostname"]) == {doc["environment"]["hostname"]}
    assert df["encrypted"].dtype == bool and set(df.loc[df["encrypted"], "target"]) == {
        "fscrypt",
        "gocryptfs",
    }
    assert pd.api.types.is_float_dtype(df["throughput_bytes_per_s"])
    assert list(df["trial_seq"]) == sorted(df["trial_seq"])
    checked = 0
    for r in doc["results"]:
        if r["metric"] != "throughput":
            continue
        mine = df[(df["workload"] == r["workload"]) & (df["target"] == r["target"])]["throughput_bytes_per_s"]
        assert statistics.median(mine.dropna()) == pytest.approx(r["median"], rel=1e-12)
        checked += 1
    assert checked == len({r["workload"] for r in doc["results"]}) * len(doc["targets"])
    again = cli("report", "--db", str(db), "--csv", "-")  # stdout gives the same bytes
    assert again.stdout == out.read_text()


def _the_summary_csv_is_the_documents_comparisons(db: Path, doc: dict) -> None:
    done = cli("report", "--db", str(db), "--summary-csv", "-")
    assert done.returncode == 0, done.stderr
    df = pd.read_csv(io.StringIO(done.stdout))
    assert len(df) == len(doc["comparisons"])
    for c in doc["comparisons"]:
        (row,) = df[
            (df["workload"] == c["workload"])
            & (df["target"] == c["target"])
            & (df["baseline"] == c["baseline"])
        ].itertuples()
        assert row.ratio == pytest.approx(c["ratio"], rel=1e-12)
        assert row.change_percent == pytest.approx((c["ratio"] - 1) * 100)  # the one convention
        if c["ci_low"] is None:  # two trials that read one figure (stats/estimates.no_spread)
            assert math.isnan(row.change_low) and not row.significant
        else:
            assert row.change_low == pytest.approx((c["ci_low"] - 1) * 100)
            assert bool(row.significant) == (c["ci_high"] < 1 or c["ci_low"] > 1)
        assert row.target_trials == 2 and row.schema_version == doc["schema_version"]


def _the_document_validates_against_the_shipped_schema(db: Path) -> None:
    import jsonschema

    schema = json.loads((Path(__file__).parent.parent.parent / "docs" / "result-schema.json").read_text())
    done = cli("report", "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    assert [
        e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(json.loads(done.stdout))
    ] == []


def _quiet_verbose_and_no_color(db: Path) -> None:
    doc = show.run(ref="latest", db=db)
    quiet = cli("show", "-q", "--db", str(db))
    assert quiet.returncode == 0 and quiet.stderr == ""
    said = " ".join(quiet.stdout.split())
    assert said == " ".join(" ".join([*ranking.sentences(doc), *cheapest_lines(doc)]).split())
    assert cli("show", "-v", "--db", str(db)).stdout == cli("show", "--details", "--db", str(db)).stdout
    # --no-color is NO_COLOR=1: the same bytes, where colour is forced on and shows otherwise
    forced = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "100"}
    forced.pop("NO_COLOR", None)
    coloured = cli("show", "--db", str(db), env=forced).stdout
    plain = cli("show", "--no-color", "--db", str(db), env=forced).stdout
    assert plain == cli("show", "--db", str(db), env={**forced, "NO_COLOR": "1"}).stdout
    assert coloured != plain and _colours(coloured) and not _colours(plain)


def _colours(text: str) -> bool:
    """Whether any SGR sequence sets a foreground or background colour (30-38, 40-48, 90-107);
    bold and italic, which NO_COLOR keeps, do not count."""
    import re

    codes = [int(c) for seq in re.findall(r"\x1b\[([0-9;]*)m", text) for c in seq.split(";") if c]
    return any(30 <= c <= 38 or 40 <= c <= 48 or 90 <= c <= 107 for c in codes)


def _an_existing_file_is_never_overwritten(db: Path, exports: Path) -> None:
    out = exports / "mine.csv"
    out.write_text("precious\n")
    done = cli("report", "--db", str(db), "--csv", str(out))
    assert done.returncode == 2 and "does not overwrite" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in exports.iterdir()) == ["mine.csv", "run.csv"]  # no temporary file left


def _markdown_and_json_come_from_the_same_store(db: Path, doc: dict) -> None:
    md = cli("report", "latest", "--db", str(db), "--markdown")
    assert md.returncode == 0, md.stderr
    assert f"**cryptbench run {doc['run_id']}**" in md.stdout
    assert any(line.startswith("| ") and "| fscrypt |" in line for line in md.stdout.splitlines())
    js = cli("report", str(doc["run_id"]), "--db", str(db), "--json")
    shown = cli("show", str(doc["run_id"]), "--db", str(db), "--json")
    assert json.loads(js.stdout) == json.loads(shown.stdout)


def _chart_images_for_posts_and_slides(db: Path, exports: Path) -> None:
    done = cli("report", "--db", str(db), "--png", str(exports / "png"), "--svg", str(exports / "svg"))
    assert done.returncode == 0, done.stderr
    pngs = sorted(p.stem for p in (exports / "png").iterdir())
    svgs = sorted(p.stem for p in (exports / "svg").iterdir())
    assert pngs == svgs and {"ranking", "bars-sequential-1m", "overhead", "latency", "cpu"} <= set(pngs)
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in (exports / "png").iterdir())
    assert all(ET.parse(p).getroot().tag.endswith("svg") for p in (exports / "svg").iterdir())
    # never over its own files either, and a refusal writes nothing else asked for in the same command
    again = cli(
        "report", "--db", str(db), "--html", str(exports / "late.html"), "--png", str(exports / "png")
    )
    assert again.returncode == 2 and "does not overwrite" in again.stderr
    assert not (exports / "late.html").exists()


def _check_gates_on_the_worst_change(db: Path, doc: dict) -> None:
    changes = [
        (c["ratio"] - 1) * 100
        for c in doc["comparisons"]
        if c["kind"] == "baseline" and c["target"] in ("fscrypt", "gocryptfs")
    ]
    worst = min(changes)  # negative: the most speed lost
    above = cli("check", "--db", str(db), "--max-overhead", f"{-worst + 1:.2f}%")
    assert above.returncode == 0, above.stdout + above.stderr
    below = cli("check", "--db", str(db), "--max-overhead", f"{max(-worst - 1, 0):.2f}%", "--json")
    assert below.returncode == 1
    found = json.loads(below.stdout)
    assert found["passed"] is False and len(found["findings"]) == len(changes)
    assert min(f["change"] for f in found["findings"]) == pytest.approx(worst)


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with no profile, network service or first-run work of its own."""
    exe = shutil.which("chromium")
    assert exe, "chromium is not installed: `make test` installs it (scripts/install-system-deps.sh --test)"
    profile = SHOTS / "chromium-profile"
    shutil.rmtree(profile, ignore_errors=True)
    flags = [
        "--headless",
        "--no-sandbox",  # root in a VM: the sandbox needs a user namespace setup we do not make
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]
    try:
        return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120, check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def _the_html_page_in_a_browser(db: Path, doc: dict, exports: Path) -> None:
    page_file = exports / "report.html"
    done = cli("report", "--db", str(db), "--html", str(page_file))
    assert done.returncode == 0, done.stderr
    dom = _chromium("--dump-dom", page_file.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = Page()
    page.feed(dom.stdout)  # the DOM as the browser built it, not the file's text
    assert page.sections == [
        "ranking", "protection", "verdict", "environment", "bars", "overhead", "latency", "cpu", "efficiency",
        "warnings", "numbers",
    ]  # fmt: skip
    assert page.charts == [
        "ranking", "space", "bars-sequential-1m", "overhead", "latency", "cpu",
    ]  # fmt: skip
    assert page.svgs == len(page.charts) and page.external == []
    assert len(page.rows["summary-table"]) == 2 * len(doc["targets"])  # two workloads
    text = " ".join(page.text)
    assert all(s in text for d in doc["diagnosis"] for s in d["sentences"])
    # the page opens with the ranking: its sentence comes before the diagnosis
    flat = " ".join(text.split())
    first = " ".join(ranking.sentences(Document.from_json(doc))[0].split())
    assert flat.index(first) < flat.index(" ".join(doc["diagnosis"][0]["sentences"][0].split()))
    assert "helper gocryptfs" in text  # the daemon's own CPU line, from the sampled timeline
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(page_file, SHOTS / "report.html")
    for name, width in (("phone", 390), ("desktop", 1280)):
        shot = SHOTS / f"report-{name}.png"
        shot.unlink(missing_ok=True)
        taken = _chromium(f"--screenshot={shot}", f"--window-size={width},6000", page_file.as_uri())
        assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
        with Image.open(shot) as im:
            assert im.size == (width, 6000)
            # the page is drawn: more than a blank sheet (text, bars) in the top half
            assert len(im.convert("L").crop((0, 0, width, 3000)).getcolors(1 << 16) or []) > 16


@pytest.mark.beside  # refused or read before anything is made: lane 2
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say what to write"),
        (["--markdown", "12345"], "no run 12345"),
        (["--csv", "/nonexistent-dir/x.csv"], "no directory"),
        (["--html", "-"], "--html needs a file name"),
        (["--png", "/nonexistent-dir/charts"], "no directory"),
        (["--svg", "/etc/hostname"], "not a directory"),
    ],
)
def test_report_bad_input(args: list[str], message: str, tmp_path: Path) -> None:
    db = tmp_path / "empty.sqlite"
    Store.open(db).close()  # an empty store is enough for these
    done = cli("report", *args, "--db", str(db))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
