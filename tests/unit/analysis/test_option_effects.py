"""A variant (one LUKS option changed) against the target it varies: the document's
`variant` comparisons, the report's rows and table, and the diagnosis's sentences
(analysis/option_effects.py). A real store with synthetic trials: the arithmetic and
the words; the same on a run recorded in the kernel lab is in test_option_effects_lab.py."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from cryptbench.analysis import document, option_effects
from cryptbench.backends.dm_table import integrity_detail
from cryptbench.backends.luks_variants import VARIANTS
from cryptbench.model.option_kinds import OptionKind
from cryptbench.model.result import Document, TargetInfo
from cryptbench.report import answer_console, console
from cryptbench.store.database import MetricValue, Store, TrialRecord

STEADY = [100e6, 101e6, 99e6, 100.5e6, 99.5e6]  # bytes/s
NOQUEUE = {"variant_of": "luks-aes256", "option": "no dm-crypt workqueues",
           "dm_table_options": "no_read_workqueue no_write_workqueue sector_size:4096"}  # fmt: skip
SECTOR512 = {"variant_of": "luks-aes256", "option": "512-byte sectors", "dm_table_options": "none"}


def _target(name: str, baseline: str | None, details: dict[str, str]) -> TargetInfo:
    return TargetInfo(name, name, baseline, baseline is not None, "direct", "honoured", "", None,
                      None if baseline is None else True, details)  # fmt: skip


def _doc(tmp_path: Path, speed: dict[tuple[str, str], float]) -> Document:
    """ext4-loop, luks-aes256 and two variants; each (workload, target) at `speed` x STEADY,
    each trial off it by up to two thousandths, its own way: rounds whose ratios all came out
    the same would give no interval (stats/estimates.no_spread)."""
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run(
        "luks-tuning",
        {"seed": 3, "size": 1 << 20, "repeats": 5, "data": "random", "workloads": ["read", "write"]},
        {"kernel_crypto": {}},
        "0.1.0",
    )
    for t in (
        _target("ext4-loop", None, {}),
        _target("luks-aes256", "ext4-loop", {"dm_table_options": "sector_size:4096"}),
        _target("luks-aes256-noqueue", "ext4-loop", NOQUEUE),
        _target("luks-aes256-sector512", "ext4-loop", SECTOR512),
    ):
        store.insert_target(run_id, t)
    seq = 0
    for (w, t), factor in speed.items():
        for i, v in enumerate(STEADY):
            row = TrialRecord(seq=seq, block=i, repeat=i, workload=w, target=t, started_at="x", status="ok")
            wobble = 1 + 0.0004 * ((seq * 7) % 11 - 5)
            store.insert_trial(run_id, row, [MetricValue("throughput", "bytes/s", v * factor * wobble)])
            seq += 1
    store.finish_run(run_id, "complete")
    return document.build(store, run_id)


SPEEDS = {
    ("read", "ext4-loop"): 1.0,
    ("read", "luks-aes256"): 0.5,
    ("read", "luks-aes256-noqueue"): 0.75,  # +50 % against luks-aes256
    ("read", "luks-aes256-sector512"): 0.5,  # no change
    ("write", "ext4-loop"): 1.0,
    ("write", "luks-aes256"): 0.6,
    ("write", "luks-aes256-noqueue"): 0.6,  # no change
    ("write", "luks-aes256-sector512"): 0.3,  # -50 %
}


@pytest.fixture
def doc(tmp_path: Path) -> Document:
    return _doc(tmp_path, SPEEDS)


def test_each_variant_is_compared_with_the_target_it_varies(doc: Document) -> None:
    variant = {(c.workload, c.target): c for c in doc.comparisons if c.kind == "variant"}
    assert set(variant) == {
        (w, t) for w in ("read", "write") for t in ("luks-aes256-noqueue", "luks-aes256-sector512")
    }
    assert all(c.baseline == "luks-aes256" for c in variant.values())
    assert variant[("read", "luks-aes256-noqueue")].ratio == pytest.approx(1.5, abs=0.005)
    assert variant[("write", "luks-aes256-sector512")].ratio == pytest.approx(0.5, abs=0.005)
    # and still each against its own baseline; luks-aes256 itself varies nothing
    kinds = {(c.target, c.kind) for c in doc.comparisons}
    assert ("luks-aes256-noqueue", "baseline") in kinds and ("luks-aes256", "variant") not in kinds
    assert any(
        line.startswith("luks-aes256-noqueue against luks-aes256, of 2 workloads") for line in doc.conclusions
    )


def test_the_option_kind_is_the_variants_own_declaration(doc: Document) -> None:
    t = {t.name: t for t in doc.targets}
    assert option_effects.kind_of(t["luks-aes256-noqueue"]) is OptionKind.WORKQUEUES
    assert option_effects.kind_of(t["luks-aes256-sector512"]) is OptionKind.SECTOR
    submit = TargetInfo("s", "luks-aes256-submitcpus", "e", True, "direct", None, None, None, True, {})
    assert option_effects.kind_of(submit) is OptionKind.SUBMIT  # whatever its details say
    assert option_effects.kind_of(t["luks-aes256"]) is OptionKind.OTHER  # no variant: no option
    # every variant of another declares what its option is, with the reasons it helps or hurts
    for name, v in VARIANTS.items():
        assert (v.option is not None) == (v.variant_of is not None), name


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("luks-aes256-hmac", OptionKind.INTEGRITY),
        ("luks-aes256-hmac-nojournal", OptionKind.INTEGRITY_DIRECT),
    ],
)
def test_integrity_is_told_apart_by_its_journal(name: str, kind: OptionKind) -> None:
    """From the details the provisioner records: the table's options and dm-integrity's mode."""
    v = VARIANTS[name]
    assert v.integrity and v.integrity_mode
    details = {
        "variant_of": "luks-aes256",
        "option": v.label,
        "dm_table_options": " ".join(v.table_options),
        "integrity": integrity_detail(v.integrity, v.integrity_mode),
    }
    t = TargetInfo(name, name, "ext4-loop", True, "direct", None, None, None, True, details)
    assert option_effects.kind_of(t) is kind
    assert "HMAC-SHA256 tag" in kind.why(False) and ("journal first" in kind.why(False)) == v.journal


def test_the_diagnosis_says_where_each_option_helps_hurts_or_changes_nothing(doc: Document) -> None:
    told = {d.target: d.sentences for d in doc.diagnosis}
    # after what limits each (no cipher ceiling here: "unknown"), what its option changes
    noqueue = told["luks-aes256-noqueue"][-2:]
    assert noqueue[0].startswith(
        "No dm-crypt workqueues (luks-aes256-noqueue) is faster than luks-aes256 at read +50% ["
    )
    assert "dm-crypt's workqueues cost more than they give" in noqueue[0]
    assert noqueue[1] == "At the other workload it changes nothing beyond its interval."
    sector = [x for x in told["luks-aes256-sector512"] if x.startswith("512-byte")]
    assert sector[0].startswith(
        "512-byte sectors (luks-aes256-sector512) is slower than luks-aes256 at write -50% ["
    )
    assert "eight cipher calls" in sector[0]
    # the target varied has no option of its own to speak of
    assert not any("luks-aes256 at" in x or "against luks-aes256" in x for x in told["luks-aes256"])


def test_an_option_that_changes_nothing_is_said_to_do_so_on_this_kernel(tmp_path: Path) -> None:
    same = {k: (0.5 if k[1] != "ext4-loop" else 1.0) for k in SPEEDS}
    doc = _doc(tmp_path, same)
    told = {d.target: d.sentences for d in doc.diagnosis}
    assert told["luks-aes256-noqueue"][-1:] == [
        "No dm-crypt workqueues (luks-aes256-noqueue) changes nothing beyond its interval against "
        "luks-aes256 at any of 2 workloads on this kernel."
    ]


def test_the_report_shows_each_options_change_against_plain_luks(doc: Document) -> None:
    out = io.StringIO()
    answer_console.render(doc, Console(file=out, width=100, color_system=None))
    text = out.getvalue()
    rows = [line for line in text.splitlines() if "vs luks-aes256" in line]
    assert len(rows) == 2 and all(
        not line.lstrip().startswith("luks") for line in rows
    )  # unnamed second rows
    assert "+50±" in rows[0] and "-50±" in rows[1]
    assert "A row with no target name holds the target above it" in text
    (table,) = console.variant_tables(doc)
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(table)
    lines = out.getvalue().splitlines()
    assert "What each option changes against luks-aes256" in lines[0]
    head = next(line for line in lines if "workload" in line)
    assert "-noqueue" in head and "-sector512" in head
    read = next(line for line in lines if line.strip().startswith("read"))
    assert "+50±" in read


def test_a_run_without_variants_prints_neither_rows_nor_table(tmp_path: Path) -> None:
    speeds = {k: v for k, v in SPEEDS.items() if k[1] in ("ext4-loop", "luks-aes256")}
    doc = _doc(tmp_path, speeds)
    assert console.variant_tables(doc) == []
    out = io.StringIO()
    answer_console.render(doc, Console(file=out, width=100, color_system=None))
    assert "vs luks-aes256" not in out.getvalue() and "A row with no target name" not in out.getvalue()
