"""The result document: one model built from the store, rendered by every format.

Its JSON form is a contract (`--json`, `show --json`): schema_version, run_id,
environment, targets[], results[] (each sample's round beside it), comparisons[]
(each with the precision its interval reached, whether it was paired by round and,
for a target against its baseline, what stopped its repetition), stopping (the rule,
each question's answer, the bytes and seconds the trials spent), warnings[],
device_writes (where the scratch space has a block device), efficiency[] (each
encrypted target's throughput against the lower of plain's on its medium and its
cipher's ceiling, with where that ceiling came from, and CPU-seconds per GB),
qd_curves[] (the change against the baseline by queue depth, per pattern that ran at
several depths), diagnosis[] (per encrypted target, sentences naming its limit, and
each workload's finding), ranking[] (schema 2: per host and medium, the encrypted
targets ranked by their cost against plain overall, per family and per workload,
with ties, and those not ranked with why), and for a suite that follows a study with
its own summary, study_summary. Throughput is in bytes/s and latency in seconds.
Later versions add keys; they do not rename.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, replace
from pathlib import Path

from cryptbench.analysis import diagnosis, ranking, study_summary, warning_rules
from cryptbench.analysis.speed_change import change_words, percent, speed_change
from cryptbench.backends.base import RAM_PREFIX
from cryptbench.cipher import ceilings
from cryptbench.cipher.cipher_document import CipherDocument
from cryptbench.engines.metric_catalog import CATALOG, info
from cryptbench.fleet import spread
from cryptbench.model.errors import UsageError, did_you_mean
from cryptbench.model.metrics import PRIMARY
from cryptbench.model.result import (
    Comparison,
    ComparisonKind,
    DeviceWrites,
    Document,
    QdCurve,
    QdPoint,
    Result,
    TargetInfo,
    TrialCounts,
)
from cryptbench.model.stored_run import Environment, RunPlan
from cryptbench.model.vocabulary import Medium, TrialStatus
from cryptbench.stats import estimates
from cryptbench.store.database import Store
from cryptbench.store.rows import StoredRun

DOCUMENT_SCHEMA = 5  # 2 added ranking; 3 each target's protection; 4 its tampering and space;
# 5 every percentage a change in speed, negative when slower (change_percent, not overhead_percent)
STORED_CIPHERS = 20  # newest standalone cipher measurements searched for this machine's


def read(db: Path, run: int | str) -> Document:
    """The document of a stored run in database `db`: `run` is its id, or a reference as
    the user typed it (an id, or latest)."""
    store = Store.open(db, create=False)
    try:
        run_id = run if isinstance(run, int) else store.resolve_run(run)
        stored = store.stored_run(run_id, STORED_CIPHERS)
    finally:
        store.close()
    return compose(stored)


def build(store: Store, run_id: int) -> Document:
    """The document of run `run_id` in an open store."""
    return compose(store.stored_run(run_id, STORED_CIPHERS))


def compose(stored: StoredRun) -> Document:
    """The document of a run read from the store: everything in it is computed from `stored`."""
    run, targets, trials, stopping = stored.run, stored.targets, stored.trials, stored.stopping
    samples, rounds, fleet_hosts = stored.samples, stored.rounds, stored.fleet_hosts
    plan, env = RunPlan(run.plan), Environment(run.environment)
    answers = {(a.workload, a.target, a.baseline): a for a in stopping.answers} if stopping else {}
    seed = plan.seed
    tmap = {t.name: t for t in targets}
    compared = [(t, baseline, kind) for t in targets for baseline, kind in _baselines(t, tmap)]
    target_names = [t.name for t in targets]
    summary = study_summary.build(
        plan, samples, target_names, lambda *parts: estimates.figure_seed(seed, *parts)
    )
    workloads = [w for w in plan.workloads if any(t.workload == w for t in trials)]
    # The catalog's metrics in its order, then an app's phase metrics as it recorded them.
    names = list(dict.fromkeys([*CATALOG, *(m for (_w, _t, m) in samples)]))
    results = []
    for w in workloads:
        for tn in target_names:
            for metric in names:
                values = samples.get((w, tn, metric))
                if not values:
                    continue
                s = estimates.summarize(values, seed=estimates.figure_seed(seed, w, tn, metric))
                # estimates.Summary's fields (n, median, … ci_high) are Result's figures, by name
                results.append(
                    Result(
                        w, tn, metric, info(metric).unit, values, **asdict(s), rounds=rounds[(w, tn, metric)]
                    )
                )

    comparisons = []
    for w in workloads:
        metric = plan.primary(w)
        for t, baseline, kind in compared:
            a = samples.get((w, t.name, metric))
            b = samples.get((w, baseline, metric))
            if not a or not b:
                continue
            r = estimates.speed_ratio(
                a,
                b,
                info(metric).higher_is_better,
                estimates.figure_seed(seed, w, t.name, baseline),
                rounds[(w, t.name, metric)],
                rounds[(w, baseline, metric)],
            )
            answer = answers.get((w, t.name, baseline)) if kind == ComparisonKind.BASELINE else None
            comparisons.append(
                Comparison(
                    workload=w,
                    target=t.name,
                    baseline=baseline,
                    kind=kind,
                    metric=metric,
                    ratio=r.ratio,
                    ci_low=r.ci_low,
                    ci_high=r.ci_high,
                    change_percent=(r.ratio - 1) * 100,
                    precision=estimates.halfwidth(r),
                    stopped_by=None if answer is None else answer.stopped_by,
                    method=r.method,
                )
            )

    written = [v for (_w, _t, m), vs in samples.items() if m == "device_bytes_written" for v in vs]
    doc = Document(
        schema_version=DOCUMENT_SCHEMA,
        run_id=run.id,
        status=run.status,
        started_at=run.started_at,
        finished_at=run.finished_at,
        tool_version=run.tool_version,
        suite=run.suite,
        plan=plan,
        environment=env,
        targets=targets,
        results=results,
        comparisons=comparisons,
        trials=TrialCounts(
            ok=sum(t.status == TrialStatus.OK for t in trials),
            failed=sum(t.status != TrialStatus.OK for t in trials),
        ),
        notes=run.notes,
        stopping=stopping,
        # what wears the device: its own counter over every trial, layers' overhead included
        device_writes=DeviceWrites(env.scratch_device, sum(written), len(written)) if written else None,
        study_summary=summary,
    )
    # the warnings read the figures and the trials; what follows reads the warnings too
    doc = replace(doc, warnings=warning_rules.find(doc, trials))
    doc = replace(
        doc,
        # Efficiency and diagnosis hold a target to plain and to its cipher's
        # ceiling on its own machine: a fleet run takes neither per host (yet),
        # and the coordinator's stored ceilings describe another machine.
        efficiency=[] if fleet_hosts else [e.row() for e in efficiency(stored, doc)],
        qd_curves=qd_curves(doc),
    )
    doc = replace(doc, ranking=ranking.build(doc))
    doc = replace(doc, conclusions=conclusions(doc))
    doc = replace(doc, diagnosis=[] if fleet_hosts else diagnosis.diagnose(doc))
    if fleet_hosts:
        doc = replace(doc, fleet=spread.fleet_section(doc, fleet_hosts))
    return doc


def efficiency(run: StoredRun, doc: Document) -> list[ceilings.Efficiency]:
    """Each encrypted target's throughput against the lower of plain's on its
    medium and its cipher's (cipher/ceilings.py), per workload: the ceiling from the run's
    own cipher figures, else from the newest standalone ones of this machine."""
    run_rows = run.ciphers
    stored = [
        ceilings.StoredCipher(r.id, r.measured_at, r.environment, CipherDocument.from_json(r.result))
        for r in run.machine_ciphers
    ]
    medians = {
        (r.workload, r.target, r.metric): r.median
        for r in doc.results
        if r.metric in (PRIMARY, "cpu_seconds_per_gb")
    }
    specs = doc.plan.workload_specs
    resolver = ceilings.Resolver(
        doc.environment.raw,
        CipherDocument.from_json(run_rows[0].result) if run_rows else None,
        stored,
        {(w, t): v for (w, t, m), v in medians.items() if m == PRIMARY},
        {
            t.name.removeprefix(RAM_PREFIX): (t.baseline or "").removeprefix(RAM_PREFIX) or None
            for t in doc.targets
        },
        {w: ceilings.direction(specs.get(w, {}).get("rw")) for w in doc.plan.workloads},
        ceilings.bulk_workloads(specs),
    )
    names = {t.name for t in doc.targets}
    out = []
    for w in doc.plan.workloads:
        if specs.get(w, {}).get("view", "decrypted") != "decrypted":
            continue  # reading the ciphertext runs no cipher: no ceiling applies
        for t in doc.targets:
            achieved = medians.get((w, t.name, PRIMARY))
            if not t.encrypted or achieved is None:
                continue
            candidate = RAM_PREFIX + "plain" if t.medium == Medium.RAM else "plain"
            plain = candidate if candidate in names and (w, candidate, PRIMARY) in medians else None
            ceiling, cores = resolver.resolve(t.name, t.backend, w)
            out.append(
                ceilings.Efficiency(
                    w,
                    t.name,
                    achieved,
                    None if plain is None else medians[(w, plain, PRIMARY)],
                    plain,
                    ceilings.cipher_use(t.backend),
                    ceiling,
                    cores,
                    resolver.openssl(t.backend),
                    medians.get((w, t.name, "cpu_seconds_per_gb")),
                    None if plain is None else medians.get((w, plain, "cpu_seconds_per_gb")),
                )
            )
    return out


def qd_curves(doc: Document) -> list[QdCurve]:
    """Each target's change against its baseline as queue depth grows, per
    pattern (rw and block size) that ran at two or more depths."""
    specs = doc.plan.workload_specs
    families: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
    for w in doc.plan.workloads:
        s = specs.get(w)
        depths = {d for d, _w in families[(s["rw"], s["bs"])]} if s is not None else set()
        # the first workload at each depth (a study's as-published twin repeats a pattern)
        if s is not None and s.get("view", "decrypted") == "decrypted" and s["iodepth"] not in depths:
            families[(s["rw"], s["bs"])].append((s["iodepth"], w))
    against_baseline = {
        (c.workload, c.target): c for c in doc.comparisons if c.kind == ComparisonKind.BASELINE
    }
    curves = []
    for (rw, bs), members in families.items():
        if len(members) < 2:
            continue
        members.sort()
        for t in doc.targets:
            points = []
            for depth, w in members:
                c = against_baseline.get((w, t.name))
                if c is not None:
                    pct, interval, _ = speed_change(c)
                    low, high = interval or (None, None)
                    points.append(QdPoint(depth, w, pct, low, high))
            if len(points) >= 2:
                curves.append(QdCurve(rw, bs, t.name, t.baseline, points))
    return curves


def results_by_key(doc: Document) -> dict[tuple[str, str, str], Result]:
    """A document's results by (workload, target, metric)."""
    return {(r.workload, r.target, r.metric): r for r in doc.results}


def require_metric(doc: Document, metric: str) -> None:
    """A metric asked for by name (`show --metric`, `compare --metric`) must be one the run has."""
    if not any(r.metric == metric for r in doc.results):
        known = sorted({r.metric for r in doc.results})
        hint = did_you_mean(metric, known) or f" (it has: {', '.join(known)})"
        raise UsageError(f"run {doc.run_id} has no metric {metric[:40]!r}{hint}")


def _baselines(t: TargetInfo, tmap: dict[str, TargetInfo]) -> list[tuple[str, ComparisonKind]]:
    """(baseline, kind): the same stack without the cipher; plain on the same medium when that
    differs; for a target with a RAM twin (--ram), the twin: what the device costs it; and for
    a variant (one LUKS option changed), the target it varies: what the option changes."""
    out = []
    ram = t.medium == Medium.RAM
    plain = RAM_PREFIX + "plain" if ram else "plain"
    if t.baseline and t.baseline in tmap:
        out.append((t.baseline, ComparisonKind.BASELINE))
    if t.name != plain and t.baseline != plain and plain in tmap:
        out.append((plain, ComparisonKind.PLAIN))
    if not ram and RAM_PREFIX + t.name in tmap:
        out.append((RAM_PREFIX + t.name, ComparisonKind.RAM))
    parent = t.details.get("variant_of")
    if parent:
        # the same decorations (ram:, @state, host/) on the target it differs from in one choice
        twin = t.name.replace(t.backend, str(parent), 1)
        if twin in tmap:
            out.append((twin, ComparisonKind.VARIANT))
    return out


def _cost(c: Comparison) -> str:
    """'-62% [-66, -58]*': a comparison in the tool's one convention."""
    pct, interval, _ = speed_change(c)
    return change_words(pct, interval)


def conclusions(doc: Document) -> list[str]:
    """Plain-language lines, one per (target, baseline) pair.

    A workload whose whole 95 % interval lies within the equivalence margin shows no
    measurable cost. Of the rest, only those whose interval excludes 'no change'
    count as slower or faster; the others are said to show no clear difference,
    not averaged in.
    """
    lines = []
    margin = doc.equivalence
    pairs: dict[tuple[str, str], list[Comparison]] = defaultdict(list)
    for c in doc.comparisons:
        pairs[(c.target, c.baseline)].append(c)
    for (target, baseline), cs in pairs.items():
        if cs[0].kind == ComparisonKind.RAM:
            # The stack against its own RAM twin: what the device costs it.
            target = f"{target} on the device"
            baseline = f"the same stack on RAM ({baseline})"
        same = [c for c in cs if estimates.equivalent(estimates.Ratio(c.ratio, c.ci_low, c.ci_high), margin)]
        rest = [c for c in cs if c not in same]
        slower = [c for c in rest if c.ci_high is not None and c.ci_high < 1]
        faster = [c for c in rest if c.ci_low is not None and c.ci_low > 1]
        unclear = len(rest) - len(slower) - len(faster)
        within = f"±{(margin or 0) * 100:g}%"
        if len(same) == len(cs):
            lines.append(
                f"{target} has no measurable cost against {baseline} on any workload (each within {within})."
            )
            continue
        if len(slower) == len(cs):
            least = max(c.change_percent for c in cs)
            worst = min(cs, key=lambda c: c.change_percent)
            span = (
                f"{percent(least)}% to {percent(worst.change_percent)}%"
                if round(least) != round(worst.change_percent)
                else f"{percent(least)}%"
            )
            what = "throughput" if all(c.metric == PRIMARY for c in cs) else "speed"
            lines.append(
                f"{target} is slower than {baseline} on every workload: {span} in {what} "
                f"(most at {worst.workload}: {_cost(worst)})."
            )
            continue
        parts = []
        if same:
            parts.append(f"no measurable cost at {len(same)} (within {within})")
        if slower:
            worst = min(slower, key=lambda c: c.change_percent)
            parts.append(f"slower at {len(slower)} (most at {worst.workload}: {_cost(worst)})")
        if faster:
            best = max(faster, key=lambda c: c.change_percent)
            parts.append(f"faster at {len(faster)} (most at {best.workload}: {_cost(best)})")
        if unclear:
            parts.append(f"no clear difference at {unclear}")
        lines.append(f"{target} against {baseline}, of {len(cs)} workloads: " + "; ".join(parts) + ".")
    return lines
