"""Two stored runs side by side (`cryptbench compare A B`): what changed, and whether
the runs measured the same things so that the change means something.

Per workload and target both runs measured, the ratio of B's speed to A's (for a
time or a latency, A's figure over B's, so above 1 always means B is faster) with
its 95 % bootstrap interval, and whether the difference is significant: a two-sided
Mann-Whitney U test at 5 % where the two sample sizes let its p-value get below
5 % at all (3 against 3 trials cannot: the smallest exact p is 0.10), otherwise
whether the two medians' 95 % intervals are disjoint (the cruder, stricter
check). Each encrypted target's change in speed against its baseline is set beside
the same in the other run.

Differences between the runs are of two kinds. Some make the figures measure
different things (bytes per trial, write buffer contents, a workload's fio
parameters, a target's stack or I/O mode, how caches were dropped, the I/O
engine): `compare` refuses those unless forced. The rest (host, kernel, CPU,
versions, repetition) are what one usually compares across, and are listed.
Pure: everything comes from the two result documents.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from cryptbench.analysis.document import results_by_key
from cryptbench.analysis.speed_change import change_words, speed_change
from cryptbench.engines.metric_catalog import info
from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.result import ComparisonKind, Document, Result
from cryptbench.model.stack import Stack
from cryptbench.model.stored_run import Environment, RunPlan
from cryptbench.model.units import format_bytes
from cryptbench.stats import estimates

ALPHA = 0.05  # significance level of the Mann-Whitney U test
METHOD = (
    "Significant: a two-sided Mann-Whitney U test at 5 % (p) where the trial counts let p get below "
    "5 % at all (4 against 4 can, 3 against 3 cannot), else whether the two medians' 95 % intervals "
    "are disjoint; cannot tell with a single trial on a side."
)
# Target details that change every run (a loop device's number, a helper's pid, where the key
# came from), name a version (the environment lists versions) or restate the backing image's
# size (compared as data per trial): they do not make two targets different stacks.
# dm_table and dm_integrity_table name the run's loop device; what they say of the stack
# is compared through dm_table_options, dm_table_cipher and integrity.
_VOLATILE_DETAILS = {"loop_device", "helpers", "key", "password", "gocryptfs", "qemu", "version", "image"}
_VOLATILE_DETAILS |= {"dm_table", "dm_integrity_table"}


@dataclass(frozen=True)
class Difference:
    what: str  # e.g. "data per trial", "target fscrypt: I/O mode", "kernel"
    a: str  # run A's value, as text
    b: str  # run B's value, as text
    blocking: bool  # True: the figures measure different things; compare refuses without --force

    def words(self) -> str:
        return f"{self.what}: {self.a} vs {self.b}"


@dataclass(frozen=True)
class Row:
    """One workload and target in both runs, on one metric."""

    workload: str
    target: str
    metric: str
    unit: str  # of the medians: bytes/s, s, ops/s, …
    higher_is_better: bool | None  # the metric's direction; None: neither (context, not a score)
    a_n: int  # trials
    a_median: float  # in `unit`
    a_low: float | None  # 95 % interval of the median, in `unit`; None below 2 trials
    a_high: float | None
    b_n: int
    b_median: float
    b_low: float | None
    b_high: float | None
    ratio: float  # B's speed over A's: above 1, B is faster (for a time: A's over B's); for a
    # metric with no direction, B's figure over A's
    ratio_low: float | None  # 95 % bootstrap interval of the ratio; None below 2 trials a side
    ratio_high: float | None
    test: str  # mann-whitney, intervals, or none (a side has fewer than 2 trials)
    p_value: float | None  # Mann-Whitney U, two-sided; None for the other tests
    significant: bool | None  # None: cannot be told

    def change(self) -> str:
        """B against A as a change in speed (for a metric of no direction, in its value), in
        the tool's one convention: '-50% [-60, -38]', negative when B is slower. Unmarked:
        the significance is the test's (`evidence`), not the interval's."""
        if self.ratio <= 0:
            return "no speed in B"
        pct = (self.ratio - 1) * 100
        if self.ratio_low is None or self.ratio_high is None:
            return change_words(pct, None)
        return change_words(pct, ((self.ratio_low - 1) * 100, (self.ratio_high - 1) * 100), mark=False)

    def evidence(self) -> str:
        """How significance was decided, briefly (`METHOD` says how in full)."""
        if self.test == "mann-whitney":
            return f"p = {self.p_value:.3f}"
        if self.test == "intervals":
            return "intervals disjoint" if self.significant else "intervals overlap"
        return "cannot tell"

    def to_json(self) -> JsonObject:
        return {**self.__dict__, "words": self.change(), "evidence": self.evidence()}


@dataclass(frozen=True)
class CostRow:
    """An encrypted target's change in speed against its baseline in each run."""

    workload: str
    target: str
    baseline: str
    a: float  # percent, negative when slower
    a_interval: tuple[float, float] | None  # percent, low to high
    b: float  # percent, negative when slower
    b_interval: tuple[float, float] | None
    changed: bool  # the two intervals are disjoint

    def to_json(self) -> JsonObject:
        return self.__dict__.copy()


@dataclass(frozen=True)
class RunInfo:
    run_id: int
    db: str  # the database it was read from
    started_at: str  # ISO 8601, UTC
    suite: str
    host: str
    kernel: str
    status: str  # complete, interrupted, failed


@dataclass(frozen=True)
class Comparison:
    a: RunInfo
    b: RunInfo
    rows: list[Row]
    costs: list[CostRow]
    differences: list[Difference]
    only_in_a: list[str] = field(default_factory=list)  # "workload W", "target T", "W on T: no figures"
    only_in_b: list[str] = field(default_factory=list)
    forced: bool = False  # blocking differences were overridden with --force

    @property
    def blocking(self) -> list[Difference]:
        return [d for d in self.differences if d.blocking]

    def counts(self) -> dict[str, int]:
        """How many rows B is clearly faster, clearly slower, or not clearly different on."""
        out = {"faster": 0, "slower": 0, "unclear": 0}
        for r in self.rows:
            key = "unclear" if not r.significant else ("faster" if r.ratio > 1 else "slower")
            out[key] += 1
        return out

    def summary(self) -> str:
        c = self.counts()
        tests = sum(r.test == "mann-whitney" for r in self.rows)
        up, down = (
            ("faster", "slower")
            if any(r.higher_is_better is not None for r in self.rows)
            else (
                "higher",
                "lower",
            )
        )
        text = (
            f"B against A, {len(self.rows)} workload-target pairs: "
            f"{up} on {c['faster']}, {down} on {c['slower']}, no clear difference on {c['unclear']}."
        )
        if tests:
            text += (
                f" {tests} Mann-Whitney tests at 5 %: about {tests / 20:.1f} could differ by chance alone."
            )
        return text

    def to_json(self) -> JsonObject:
        return {
            "a": self.a.__dict__,
            "b": self.b.__dict__,
            "forced": self.forced,
            "summary": self.summary(),
            "counts": self.counts(),
            "differences": [d.__dict__ for d in self.differences],
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "rows": [r.to_json() for r in self.rows],
            "costs": [o.to_json() for o in self.costs],
        }


def run_info(doc: Document, db: str) -> RunInfo:
    env = doc.environment
    return RunInfo(
        doc.run_id,
        db,
        doc.started_at,
        doc.suite,
        str(env.hostname),
        str(env.kernel),
        doc.status,
    )


def mann_whitney_possible(n_a: int, n_b: int, alpha: float = ALPHA) -> bool:
    """Whether an exact two-sided Mann-Whitney U test of these sample sizes can reach p < alpha:
    its smallest p-value is 2 / C(n_a + n_b, n_a) (every B above every A)."""
    return n_a >= 1 and n_b >= 1 and 2 / math.comb(n_a + n_b, n_a) < alpha


def _text(v: Any) -> str:
    return "-" if v is None else str(v)


def differences(a: Document, b: Document) -> list[Difference]:
    """Everything that differs between two runs' conditions, blocking first."""
    out: list[Difference] = []
    pa, pb = a.plan, b.plan
    ea, eb = a.environment, b.environment

    def blocking(what: str, va: Any, vb: Any) -> None:
        if va != vb:
            out.append(Difference(what, _text(va), _text(vb), True))

    if pa.size != pb.size:
        out.append(Difference("data per trial", _text(_size(pa)), _text(_size(pb)), True))
    blocking("write buffers", pa.data, pb.data)
    blocking("writes to a new file", pa.write_new_file, pb.write_new_file)
    blocking("cache drop", ea.cache_drop, eb.cache_drop)
    blocking("fio ioengine", ea.ioengine, eb.ioengine)
    for w in _common(pa.workloads, pb.workloads):
        blocking(f"workload {w}: metric", pa.primary(w), pb.primary(w))
        spec_a, spec_b = pa.spec(w), pb.spec(w)
        if spec_a != spec_b:
            out.append(Difference(f"workload {w}: definition", _spec(spec_a), _spec(spec_b), True))
    ta = {t.name: t for t in a.targets}
    tb = {t.name: t for t in b.targets}
    for name in _common(list(ta), list(tb)):
        x, y = ta[name], tb[name]
        for key, label in (
            ("backend", "backend"),
            ("encrypted", "encrypted"),
            ("baseline", "baseline"),
            ("medium", "medium"),
            ("io_mode", "I/O mode"),
        ):
            blocking(f"target {name}: {label}", getattr(x, key), getattr(y, key))
        dx, dy = x.details, y.details
        for key in sorted((set(dx) | set(dy)) - _VOLATILE_DETAILS):
            blocking(f"target {name}: {key}", dx.get(key), dy.get(key))

    def listed(what: str, va: Any, vb: Any) -> None:
        if va != vb:
            out.append(Difference(what, _text(va), _text(vb), False))

    listed("host", ea.hostname, eb.hostname)
    listed("CPU", _cpu(ea), _cpu(eb))
    listed("memory", _mem(ea), _mem(eb))
    listed("OS", ea.os, eb.os)
    listed("kernel", ea.kernel, eb.kernel)
    listed("kernel's xts(aes)", ea.driver("xts(aes)"), eb.driver("xts(aes)"))
    listed("scratch filesystem", _scratch(ea), _scratch(eb))
    sa, sb = ea.stack, eb.stack
    if sa is not None and sb is not None:  # runs stored before runs kept their stack have none
        # a plain target on dm-crypt is not the plain of a run on a bare disk
        blocking("encryption under the scratch space", _encrypting(sa), _encrypting(sb))
        listed("stack under the scratch space", sa.line(), sb.line())
    listed("fio", ea.fio, eb.fio)
    listed("gocryptfs", ea.gocryptfs, eb.gocryptfs)  # runs stored before Backend.version()
    listed("python", ea.python, eb.python)
    va, vb = ea.versions, eb.versions
    for backend in dict.fromkeys([*va, *vb]):
        listed(f"{backend}'s version", va.get(backend), vb.get(backend))
    listed("cryptbench", a.tool_version, b.tool_version)
    listed("suite", a.suite, b.suite)
    listed("repeats", _repeats(pa), _repeats(pb))
    listed("status", a.status, b.status)
    return out


def _common(xs: list[str], ys: list[str]) -> list[str]:
    """The names in both, in the first list's order."""
    theirs = set(ys)
    return [x for x in xs if x in theirs]


def _size(plan: RunPlan) -> str | None:
    return None if plan.size is None else format_bytes(plan.size)


def _spec(spec: Any) -> str:
    if not isinstance(spec, dict):
        return _text(spec)
    return ", ".join(f"{k}={v}" for k, v in spec.items())


def _cpu(env: Environment) -> str:
    return f"{env.cpu_model}, {env.cpu_count} cores"


def _mem(env: Environment) -> str | None:
    return format_bytes(env.memory_bytes) if env.memory_bytes else None


def _scratch(env: Environment) -> str | None:
    fs = env.target_filesystem
    return None if not fs else f"{fs.get('fstype')} on {fs.get('source')}"


def _encrypting(stack: Stack) -> str:
    return " and ".join(layer.short() for layer in stack.encrypting) or "none"


def _repeats(plan: RunPlan) -> str:
    return "adaptive" if plan.repeats is None else str(plan.repeats)


def _significance(ra: Result, rb: Result) -> tuple[str, float | None, bool | None]:
    a, b = ra.samples, rb.samples
    if mann_whitney_possible(len(a), len(b)):
        from scipy import stats as sps  # here: SciPy is most of the command line's start-up time

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # identical samples: SciPy warns, p is 1
            p = float(sps.mannwhitneyu(b, a, alternative="two-sided").pvalue)
        p = 1.0 if math.isnan(p) else p
        return "mann-whitney", p, p < ALPHA
    if ra.ci_low is None or ra.ci_high is None or rb.ci_low is None or rb.ci_high is None:
        return "none", None, None
    disjoint = ra.ci_high < rb.ci_low or rb.ci_high < ra.ci_low
    return "intervals", None, disjoint


def compare(
    a: Document,
    b: Document,
    *,
    db_a: str,
    db_b: str,
    metric: str | None = None,
    force: bool = False,
) -> Comparison:
    """The comparison of run B against run A. Raises UsageError when their conditions differ
    in a way that makes the figures measure different things, unless `force`."""
    pair = f"A (run {a.run_id}) and B (run {b.run_id})"
    workloads = _common(a.plan.workloads, b.plan.workloads)
    names_a = [t.name for t in a.targets]
    names_b = [t.name for t in b.targets]
    targets = _common(names_a, names_b)
    if not workloads or not targets:
        missing = "workload" if not workloads else "target"
        raise UsageError(f"{pair} have no {missing} in common: nothing to compare")
    diffs = differences(a, b)
    hard = [d for d in diffs if d.blocking]
    if hard and not force:
        shown = "; ".join(d.words() for d in hard[:3])
        more = f" (and {len(hard) - 3} more)" if len(hard) > 3 else ""
        raise UsageError(
            f"{pair} did not measure the same things: {shown}{more}; --force compares them anyway"
        )
    res_a, res_b = results_by_key(a), results_by_key(b)
    only_a = [f"workload {w}" for w in a.plan.workloads if w not in workloads]
    only_a += [f"target {t}" for t in names_a if t not in targets]
    only_b = [f"workload {w}" for w in b.plan.workloads if w not in workloads]
    only_b += [f"target {t}" for t in names_b if t not in targets]
    rows = []
    for w in workloads:
        m = metric or a.plan.primary(w)
        for t in targets:
            ra, rb = res_a.get((w, t, m)), res_b.get((w, t, m))
            if ra is None or rb is None:
                if ra is not None:
                    only_a.append(f"{w} on {t}")
                elif rb is not None:
                    only_b.append(f"{w} on {t}")
                continue
            r = estimates.speed_ratio(
                rb.samples,
                ra.samples,
                info(m).higher_is_better,
                estimates.figure_seed(0, "compare", str(a.run_id), str(b.run_id), w, t, m),
            )
            test, p, significant = _significance(ra, rb)
            rows.append(
                Row(
                    w,
                    t,
                    m,
                    ra.unit,
                    info(m).higher_is_better,
                    ra.n,
                    ra.median,
                    ra.ci_low,
                    ra.ci_high,
                    rb.n,
                    rb.median,
                    rb.ci_low,
                    rb.ci_high,
                    r.ratio,
                    r.ci_low,
                    r.ci_high,
                    test,
                    p,
                    significant,
                )
            )
    if not rows:
        what = f" on {metric}" if metric else ""
        raise UsageError(f"{pair} have no workload and target measured in both{what}: nothing to compare")
    return Comparison(
        run_info(a, db_a),
        run_info(b, db_b),
        rows,
        costs(a, b),
        diffs,
        only_a,
        only_b,
        forced=bool(hard),
    )


def costs(a: Document, b: Document) -> list[CostRow]:
    """Each encrypted target's change in speed against its baseline in both runs, where both have it."""
    comps_b = {
        (c.workload, c.target, c.baseline): c for c in b.comparisons if c.kind == ComparisonKind.BASELINE
    }
    encrypted = {t.name for t in a.targets if t.encrypted}
    out = []
    for c in a.comparisons:
        other = comps_b.get((c.workload, c.target, c.baseline))
        if c.kind != ComparisonKind.BASELINE or other is None or c.target not in encrypted:
            continue
        pa, ia, _ = speed_change(c)
        pb, ib, _ = speed_change(other)
        changed = ia is not None and ib is not None and (ia[1] < ib[0] or ib[1] < ia[0])
        out.append(CostRow(c.workload, c.target, c.baseline, pa, ia, pb, ib, changed))
    return out
