"""The rules that find the warnings a run can raise, each with its thresholds beside it;
each kind's words and weight are its own (model/warning_kinds.py), and a rule supplies
the facts. Flagged in the report, never averaged away.

The rules read the result document (and, for the per-trial ones, the stored
trials); `find` applies them in the order the document lists its warnings:
the run's, then each result's, then the trials', then the comparisons'.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator

from cryptbench.cipher.ceilings import cipher_use
from cryptbench.engines.metric_catalog import info
from cryptbench.model.result import Document, Result
from cryptbench.model.units import format_value
from cryptbench.model.vocabulary import Medium, RunStatus, TrialStatus, Verdict
from cryptbench.model.warning_kinds import (
    FEW_SAMPLES_DROPPED,
    FEW_SAMPLES_MORE,
    GENERIC_AES_ALTHOUGH,
    IMPRECISE_NOT_NARROWING,
    RunWarning,
    WarningKind,
)
from cryptbench.protection.findings import Protection
from cryptbench.stats import estimates
from cryptbench.stats.stopping import BUDGETS, StopReason
from cryptbench.store.rows import TrialRow

Found = Iterator[RunWarning]

# --- the run's -------------------------------------------------------------


def interrupted(doc: Document) -> Found:
    if doc.status == RunStatus.INTERRUPTED:
        yield WarningKind.INTERRUPTED.warn()


def cache_drop_limited(doc: Document) -> Found:
    if doc.environment.cache_drop == "fadvise":
        yield WarningKind.CACHE_DROP_LIMITED.warn()


def _kernel_aes(backend: str) -> bool:
    """Whether the backend's layer runs AES in the kernel's crypto API (fscrypt, dm-crypt,
    eCryptfs), not Adiantum's XChaCha or a FUSE layer's own code."""
    use = cipher_use(backend)
    return use is not None and use.where == "kernel" and use.algorithm.endswith("(aes)")


def generic_kernel_aes(doc: Document) -> Found:
    env = doc.environment
    if env.kernel_crypto.get("generic_software_aes") and any(_kernel_aes(t.backend) for t in doc.targets):
        although = GENERIC_AES_ALTHOUGH if "aes" in env.cpu_flags else ""
        driver = env.driver("xts(aes)") or env.driver("aes")
        yield WarningKind.GENERIC_KERNEL_AES.warn(driver=driver, although=although)


def encryption_unverified(doc: Document) -> Found:
    for t in doc.targets:
        if t.encrypted and t.encryption_verified is not True:
            yield WarningKind.ENCRYPTION_UNVERIFIED.warn(target=t.name)


# A declaration and a finding, in words ("gocryptfs is said to detect tampering; here a
# flipped byte was returned silently").
SAID = {
    Verdict.HIDDEN: "hide {prop}",
    Verdict.SHOWN: "show {prop}",
    Verdict.BLOCK: "show {prop} to a block",
    Verdict.DETECTED: "detect tampering",
    Verdict.SILENT: "return tampered data silently",
    Verdict.CHECKED: "catch a changed byte by a checksum",
}
FOUND = {
    Verdict.HIDDEN: "they were hidden",
    Verdict.SHOWN: "they were shown",
    Verdict.BLOCK: "they were shown to a block",
    Verdict.DETECTED: "a flipped byte was detected",
    Verdict.SILENT: "a flipped byte was returned silently",
    Verdict.CHECKED: "a flipped byte failed its checksum",
    Verdict.UNKNOWN: "the probe could not decide",
}


def protection_disagrees(doc: Document) -> Found:
    for t in doc.targets:
        if t.protection is None:
            continue
        p = Protection.from_json(t.protection)
        if p.broken:
            continue
        for prop, f in p.findings.items():
            if f.disagrees and f.declared is not None:
                yield WarningKind.PROTECTION_DISAGREES.warn(
                    target=t.name,
                    backend=t.backend,
                    said=SAID[f.declared[0]].format(prop=prop),
                    source=f.declared[1],
                    found=FOUND[f.verdict].format(prop=prop),
                    evidence=f.evidence,
                )


def protection_unproven(doc: Document) -> Found:
    broken = next(
        (t.protection["broken"] for t in doc.targets if t.protection and t.protection.get("broken")), None
    )
    if broken:
        yield WarningKind.PROTECTION_UNPROVEN.warn(why=broken)


# --- each result of a workload's primary metric ----------------------------

MIN_SAMPLES = 3  # below this an interval is no more than the samples' range


def few_samples(doc: Document, r: Result) -> Found:
    if r.n >= MIN_SAMPLES:
        return
    if doc.stopping is not None and any(
        a.workload == r.workload and a.stopped_by == StopReason.DROPPED for a in doc.stopping.answers
    ):
        # more repeats would not have run it again: the time budget dropped it
        advice = FEW_SAMPLES_DROPPED
    else:
        advice = FEW_SAMPLES_MORE.format(least=MIN_SAMPLES)
    yield WarningKind.FEW_SAMPLES.warn(r.workload, r.target, n=r.n, advice=advice)


HIGH_CV = 0.10  # coefficient of variation above which a result is flagged


def high_variation(_doc: Document, r: Result) -> Found:
    if r.cv > HIGH_CV:
        yield WarningKind.HIGH_VARIATION.warn(r.workload, r.target, label=info(r.metric).label, cv=r.cv)


def outlier(_doc: Document, r: Result) -> Found:
    values = r.samples
    for i in estimates.outliers(values):
        yield WarningKind.OUTLIER.warn(
            r.workload,
            r.target,
            number=i + 1,
            n=r.n,
            value=format_value(values[i], r.unit),
            median=format_value(r.median, r.unit),
        )


def drift(_doc: Document, r: Result) -> Found:
    d = estimates.drift(r.samples)
    if d is not None:
        way = "down" if d.change < 0 else "up"
        yield WarningKind.DRIFT.warn(
            r.workload, r.target, label=info(r.metric).label, way=way, change=abs(d.change), rho=d.rho, p=d.p
        )


def bimodal(_doc: Document, r: Result) -> Found:
    groups = estimates.modes(r.samples)
    if groups is not None:
        low, high = groups
        yield WarningKind.BIMODAL.warn(
            r.workload,
            r.target,
            low=len(low),
            low_median=format_value(statistics.median(low), r.unit),
            high=len(high),
            high_median=format_value(statistics.median(high), r.unit),
        )


SLOW_FIRST = 0.80  # a first trial below 80 % of the others' median speed is flagged


def slow_first_trial(_doc: Document, r: Result) -> Found:
    values = r.samples
    if r.n < MIN_SAMPLES:
        return
    mid = statistics.median(values[1:])
    # The first trial's speed relative to the others' (a time inverted).
    speed = mid / values[0] if info(r.metric).higher_is_better is False else values[0] / mid
    if speed < SLOW_FIRST:
        yield WarningKind.SLOW_FIRST_TRIAL.warn(r.workload, r.target, speed=speed)


# --- the stored trials ------------------------------------------------------


def failed_trials(trials: list[TrialRow]) -> Found:
    failed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for t in trials:
        if t.status != TrialStatus.OK:
            failed[(t.workload, t.target)].append(t.error or "unknown error")
    for (w, tn), errors in failed.items():
        yield WarningKind.FAILED_TRIALS.warn(w, tn, count=len(errors), first=errors[0])


CACHE_TOLERANCE = 0.01  # fraction of the data size allowed to stay resident


def cache_not_dropped(doc: Document, trials: list[TrialRow]) -> Found:
    size = doc.plan.size or 0
    resident: dict[tuple[str, str], int] = defaultdict(int)
    # On a RAM twin every page is resident by nature: that is its medium, not a cache.
    on_ram = {t.name for t in doc.targets if t.medium == Medium.RAM}
    for t in trials:
        key = (t.workload, t.target)
        cached = t.cache_resident_bytes or 0
        if t.target not in on_ram and cached > CACHE_TOLERANCE * size:
            resident[key] = max(resident[key], cached)
    for (w, tn), n in resident.items():
        yield WarningKind.CACHE_NOT_DROPPED.warn(w, tn, kib=n // 1024)


# --- the comparisons --------------------------------------------------------

SHORT = (StopReason.MAX_REPEATS, *BUDGETS)  # stopped before the asked precision
NOT_NARROWING = 0.80  # the final half-width is still this much of the early one


def imprecise(doc: Document) -> Found:
    """A comparison that stopped short of the asked precision, and whether
    more trials would have helped: its interval after the first min_repeats
    trials against its interval now."""
    rule = None if doc.stopping is None else doc.stopping.rule
    if not rule or rule["precision"] is None:
        return
    seed = doc.plan.seed
    results = {(r.workload, r.target, r.metric): r for r in doc.results}
    for c in doc.comparisons:
        if c.stopped_by not in SHORT or c.precision is None:
            continue
        narrowing = ""
        ra = results.get((c.workload, c.target, c.metric))
        rb = results.get((c.workload, c.baseline, c.metric))
        a, b = (ra.samples, rb.samples) if ra and rb else ([], [])
        k = rule["min_repeats"]
        if ra and rb and len(a) > k and len(b) > k:
            early = estimates.halfwidth(
                estimates.speed_ratio(
                    a[:k],
                    b[:k],
                    info(c.metric).higher_is_better,
                    estimates.figure_seed(seed, c.workload, c.target, c.baseline),
                    None if ra.rounds is None else ra.rounds[:k],
                    None if rb.rounds is None else rb.rounds[:k],
                )
            )
            if early is not None and c.precision >= NOT_NARROWING * early:
                narrowing = IMPRECISE_NOT_NARROWING.format(
                    early=early * 100, k=k, now=c.precision * 100, n=len(a)
                )
        yield WarningKind.IMPRECISE.warn(
            c.workload,
            c.target,
            precision=c.precision * 100,
            baseline=c.baseline,
            asked=rule["precision"] * 100,
            stopped_by=c.stopped_by,
            narrowing=narrowing,
        )


def io_mode_mismatch(doc: Document) -> Found:
    modes = {t.name: t.io_mode for t in doc.targets}
    seen = set()
    for c in doc.comparisons:
        pair = (c.target, c.baseline)
        if modes.get(pair[0]) != modes.get(pair[1]) and pair not in seen:
            seen.add(pair)
            yield WarningKind.IO_MODE_MISMATCH.warn(
                target=pair[0],
                one=pair[0],
                one_mode=modes[pair[0]],
                other=pair[1],
                other_mode=modes[pair[1]],
            )


MIN_TRIAL_SECONDS = 1.0  # of I/O, fio's runtime: below it a figure is mostly start-up and ramp


def short_trial(doc: Document) -> Found:
    """Per fio workload, the targets whose trials moved their bytes in less than
    MIN_TRIAL_SECONDS of fio's runtime (io_bytes over throughput, trial by trial; the
    median): such a figure measures fio's start-up and the device's ramp as much as its
    speed (docs/methodology.md)."""
    specs = doc.plan.workload_specs
    by = {(r.workload, r.target, r.metric): r.samples for r in doc.results}
    for w in doc.plan.workloads:
        if w not in specs:
            continue  # an application task times itself, whole
        for t in doc.targets:
            moved, rate = by.get((w, t.name, "io_bytes")), by.get((w, t.name, "throughput"))
            if not (moved and rate and len(moved) == len(rate)):
                continue
            durations = [b / r for b, r in zip(moved, rate, strict=True) if r > 0]
            if durations and (seconds := statistics.median(durations)) < MIN_TRIAL_SECONDS:
                yield WarningKind.SHORT_TRIAL.warn(w, t.name, least=MIN_TRIAL_SECONDS, ms=seconds * 1e3)


RUN_RULES = (
    interrupted,
    cache_drop_limited,
    generic_kernel_aes,
    encryption_unverified,
    protection_disagrees,
    protection_unproven,
)
RESULT_RULES = (few_samples, high_variation, outlier, drift, bimodal, slow_first_trial)


def find(doc: Document, trials: list[TrialRow]) -> list[RunWarning]:
    """Every warning of a run, in the document's order."""
    found = [w for rule in RUN_RULES for w in rule(doc)]
    for r in doc.results:
        if r.metric == doc.plan.primary(r.workload):
            found += [w for rule in RESULT_RULES for w in rule(doc, r)]
    found += failed_trials(trials)
    found += cache_not_dropped(doc, trials)
    found += imprecise(doc)
    found += io_mode_mismatch(doc)
    found += short_trial(doc)
    return found
