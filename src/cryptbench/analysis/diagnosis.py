"""Which limit dominates each encrypted target, in a sentence or two with the numbers that show it.

Each rule below is a test on one (target, workload) of the result document:
its efficiency row (cipher/ceilings.py), its CPU figures and, with --ram, its
RAM twin. The rules are tried in the order of RULES and the first that holds
names the limit; when none holds, the cause is said to be unknown. A target's
diagnosis is the rule that holds at the most of its workloads (ties: the one
where the target lost most; "unknown" after every known limit), told at the
workload where it lost most, then the next rule likewise; a queue-depth
sweep adds how its cost moves with depth, and a variant (one LUKS option
changed) what its option changes (option_effects.py).
docs/methodology.md, "Diagnosis", states the same rules for readers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from cryptbench.analysis import option_effects
from cryptbench.analysis.speed_change import percent
from cryptbench.backends.base import RAM_PREFIX
from cryptbench.cipher.ceilings import UNKNOWN_HINT
from cryptbench.cipher.kernel import DRIVER_DETAIL, classify, is_software
from cryptbench.model.result import (
    CipherInfo,
    Document,
    EfficiencyRow,
    QdCurve,
    TargetDiagnosis,
    TargetInfo,
    WorkloadFinding,
)
from cryptbench.model.units import format_fraction, format_rate
from cryptbench.model.vocabulary import Medium

DEVICE_NEAR = 0.90  # at least this share of plain's speed: the device sets it
CIPHER_NEAR = 0.70  # at least this share of a cipher ceiling below plain's: the cipher sets it
DAEMON_BUSY = 0.80  # cores' worth of helper CPU that counts as a saturated daemon
DAEMON_LOW = 0.50  # below this efficiency a busy daemon, not the cipher, is the limit
CPU_SATURATED = 0.90  # system-wide busy fraction of all cores
LAYER_SHARE = 0.50  # on RAM, below this share of plain on RAM and of the cipher, the layer limits
LAYER_MARGIN = 1.10  # a RAM twin under this many times plain-on-device is held by the layer
QD_SHIFT = 10.0  # points of change in speed between the lowest and highest depth worth a sentence


class Rule(StrEnum):
    INCONSISTENT_BOUND = "inconsistent-bound"
    DEVICE_BOUND = "device-bound"
    KERNEL_CIPHER_BOUND = "kernel-cipher-bound"
    USERSPACE_CIPHER_BOUND = "userspace-cipher-bound"
    DAEMON_BOUND = "daemon-bound"
    CPU_SATURATED = "cpu-saturated"
    LAYER_BOUND = "layer-bound"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class DiagnosedLimit:
    """The limit the first rule that holds found for one target at one workload."""

    workload: str
    target: str
    rule: Rule
    sentence: str  # the limit, in words, with its numbers
    efficiency: float | None  # achieved over the bound, a fraction
    loss: float  # 1 - achieved / plain on the same medium (0 when plain is unknown), a fraction

    def recorded(self) -> WorkloadFinding:
        """As the document keeps it (without the loss, which only orders the sentences)."""
        return WorkloadFinding(self.workload, self.target, self.rule.value, self.sentence, self.efficiency)


@dataclass(frozen=True)
class Facts:
    """What the rules read about one (target, workload), gathered from the document."""

    e: EfficiencyRow
    target: TargetInfo
    where: str  # on the device, on RAM
    helper_cores: float | None  # helper CPU-seconds per wall second: cores' worth
    helper: str  # the helper's name, or ""
    cpu_utilization: float | None  # busy fraction of all cores
    cpu_count: int
    driver: str | None  # the kernel's driver for the layer's kernel algorithm
    acceleration: str  # its classification
    cpu_has_aes: bool
    twin: float | None  # bytes/s: this stack on RAM at the same workload
    twin_plain: float | None  # bytes/s: plain on RAM at the same workload

    @property
    def name(self) -> str:
        return self.e.target

    @property
    def head(self) -> str:
        return f"{self.name}: {format_rate(self.e.achieved)} at {self.e.workload}"


def _inconsistent_bound(f: Facts) -> str | None:
    """A bound below what the target achieved is a wrong bound, never a limit.

    Checked first: every later rule reads the bound as a ceiling, and a cipher
    "ceiling" measured too low (AF_ALG with too few requests in flight, a unit
    other than the layer's) would otherwise be named the bottleneck of a
    target that outran it.
    """
    e = f.e
    if e.ceiling is not None and e.achieved > e.ceiling:
        return (
            f"{f.head}: the measured cipher ceiling is below what {f.name} achieved "
            f"({format_rate(e.ceiling)}: {e.ceiling_source}), so that ceiling is inconsistent, not a "
            "bottleneck; no limit can be named from it (a ceiling measured with other data units or "
            "fewer requests in flight than the layer uses would read low)."
        )
    # Within DEVICE_NEAR's margin above plain, the two are as fast as each other
    # (device-bound, next); beyond it, plain cannot have been the bound.
    if e.plain is not None and e.limit == "plain" and e.achieved * DEVICE_NEAR > e.plain:
        return (
            f"{f.head}: faster than plain {f.where} ({format_rate(e.plain)}), its bound, so the bound is "
            "inconsistent (plain measured low, or the layer caches what plain does not); "
            "no limit can be named."
        )
    return None


def _device_bound(f: Facts) -> str | None:
    plain = f.e.plain
    if plain is None or f.e.achieved < DEVICE_NEAR * plain:
        return None
    return (
        f"{f.head}, {format_fraction(f.e.achieved / plain)} of plain {f.where} ({format_rate(plain)}): "
        "the medium, not the encryption, sets the speed."
    )


def _cipher_bound(f: Facts, where: str) -> tuple[CipherInfo, float] | None:
    """The layer's cipher and its ceiling, where that cipher runs `where` and holds the target."""
    e = f.e
    cipher, ceiling = e.cipher, e.ceiling
    if cipher is None or cipher.where != where or ceiling is None:
        return None
    below_plain = e.plain is None or ceiling < e.plain
    return (cipher, ceiling) if below_plain and e.achieved >= CIPHER_NEAR * ceiling else None


def _kernel_cipher_bound(f: Facts) -> str | None:
    bound = _cipher_bound(f, "kernel")
    if bound is None:
        return None
    (cipher, ceiling), e = bound, f.e
    driver = f"{f.driver}, {f.acceleration}" if f.driver else "a driver /proc/crypto did not name"
    text = (
        f"{f.head}. The kernel's {cipher.algorithm} here is {driver}. Measured at {format_rate(ceiling)} "
        f"({e.ceiling_source}), the kernel cipher is the bottleneck."
    )
    if f.driver and is_software(f.acceleration) and e.openssl:
        hw = "the CPU has AES instructions, so " if f.cpu_has_aes else ""
        text += (
            f" OpenSSL on this CPU does {format_rate(e.openssl)} with the same cipher and unit on "
            f"{'one core' if e.cores == 1 else str(e.cores) + ' cores'}; "
            f"{hw}a kernel with an AES-NI or VAES driver would remove this limit."
        )
    return text


def _userspace_cipher_bound(f: Facts) -> str | None:
    bound = _cipher_bound(f, "userspace")
    if bound is None:
        return None
    (_cipher, ceiling), e = bound, f.e
    return (
        f"{f.head}, {format_fraction(e.achieved / ceiling)} of what its cipher does here "
        f"({format_rate(ceiling)}: {e.ceiling_source}): the layer's cipher is the bottleneck."
    )


def _daemon_bound(f: Facts) -> str | None:
    e = f.e
    if not f.helper or f.helper_cores is None or f.helper_cores < DAEMON_BUSY:
        return None
    if e.efficiency is None or e.bound is None or e.efficiency >= DAEMON_LOW:
        return None
    of = "the cipher's speed" if e.limit == "cipher" else f"plain's speed {f.where}"
    return (
        f"{f.name} reaches {format_fraction(e.efficiency)} of {of} "
        f"({format_rate(e.achieved)} of {format_rate(e.bound)}) "
        f"at {e.workload} with {format_fraction(f.helper_cores)} of a core in its daemon ({f.helper}): "
        "the daemon's FUSE round trips dominate, not the cipher."
    )


def _cpu_saturated(f: Facts) -> str | None:
    if f.cpu_utilization is None or f.cpu_utilization < CPU_SATURATED:
        return None
    e = f.e
    cost = ""
    if e.cpu_seconds_per_gb is not None and e.plain_cpu_seconds_per_gb:
        cost = (
            f", {e.cpu_seconds_per_gb:.2f} CPU-seconds per GB against plain's "
            f"{e.plain_cpu_seconds_per_gb:.2f}"
        )
    return (
        f"{f.head}: the CPU was {format_fraction(f.cpu_utilization)} busy "
        f"across all {f.cpu_count} cores{cost}. "
        "The stack is CPU-bound (cipher, layer and fio together): a faster medium would not help."
    )


def _daemon_share(f: Facts) -> str:
    if not f.helper or f.helper_cores is None:
        return ""
    return f", with its daemon ({f.helper}) at {format_fraction(f.helper_cores)} of a core"


def _layer_bound(f: Facts) -> str | None:
    """Neither the medium nor the cipher explains the loss, so the layer's own work does.

    On RAM (the target itself, or its RAM twin) the stack stays below half of
    plain on RAM and below half of its cipher's ceiling, and the twin is not
    much faster than plain on the device. Without a twin, the device target
    itself is below half of plain on the device and half of its known cipher
    ceiling: then the layer's work and any extra I/O it sends the device
    cannot be told apart, and the sentence says so."""
    e = f.e
    on_ram = f.target.medium == Medium.RAM
    if not on_ram and f.twin is None:
        return _layer_bound_without_twin(f)
    rate = e.achieved if on_ram else f.twin
    ram_plain = e.plain if on_ram else f.twin_plain
    if rate is None or ram_plain is None or rate >= LAYER_SHARE * ram_plain:
        return None
    if e.ceiling is not None and rate >= LAYER_SHARE * e.ceiling:
        return None  # the cipher has a share in the loss
    if not on_ram and (e.plain is None or rate >= LAYER_MARGIN * e.plain):
        return None  # on RAM it could outrun the device: the device has a share in the loss
    ceiling = "" if e.ceiling is None else f" and its cipher's {format_rate(e.ceiling)}"
    if on_ram:
        share = format_fraction(rate / ram_plain)
        text = f"{f.head}, {share} of plain on RAM ({format_rate(ram_plain)}){ceiling}"
    elif e.plain is not None:  # a device target without plain returned above
        text = (
            f"{f.head}; the same stack on RAM does only {format_rate(rate)}, "
            f"{'below' if rate < e.plain else 'about'} plain on the device "
            f"({format_rate(e.plain)}){ceiling}"
        )
    else:
        return None
    return text + f"{_daemon_share(f)}: the layer itself, not the medium or the cipher, limits it."


def _layer_bound_without_twin(f: Facts) -> str | None:
    e = f.e
    if e.plain is None or e.ceiling is None:
        return None  # an unknown ceiling cannot be ruled out
    if e.achieved >= LAYER_SHARE * e.plain or e.achieved >= LAYER_SHARE * e.ceiling:
        return None
    return (
        f"{f.head}, {format_fraction(e.achieved / e.plain)} of plain on the device "
        f"({format_rate(e.plain)}) with a "
        f"cipher that does {format_rate(e.ceiling)}{_daemon_share(f)}: neither the device nor the cipher "
        "explains it; the layer's own work (or extra I/O it sends the device) limits it, "
        "and --ram would tell the two apart."
    )


RULES: tuple[tuple[Rule, Callable[[Facts], str | None]], ...] = (
    (Rule.INCONSISTENT_BOUND, _inconsistent_bound),
    (Rule.DEVICE_BOUND, _device_bound),
    (Rule.KERNEL_CIPHER_BOUND, _kernel_cipher_bound),
    (Rule.USERSPACE_CIPHER_BOUND, _userspace_cipher_bound),
    (Rule.DAEMON_BOUND, _daemon_bound),
    (Rule.CPU_SATURATED, _cpu_saturated),
    (Rule.LAYER_BOUND, _layer_bound),
)


def _unknown(f: Facts) -> str:
    e = f.e
    share = (
        f"{format_fraction(e.efficiency)} of its bound ({format_rate(e.bound)}, {e.limit})"
        if e.efficiency is not None and e.bound is not None
        else "no bound known"
    )
    missing = f" Its cipher's ceiling is not known: {UNKNOWN_HINT}." if e.ceiling is None else ""
    return (
        f"{f.head}, {share}; no rule applies (docs/methodology.md, Diagnosis): the cause is unknown.{missing}"
    )


@dataclass(frozen=True)
class Index:
    """The document's targets by name and medians by (workload, target, metric), built once per document."""

    targets: dict[str, TargetInfo]
    medians: dict[tuple[str, str, str], float]

    @classmethod
    def of(cls, doc: Document) -> Index:
        return cls(
            {t.name: t for t in doc.targets},
            {(r.workload, r.target, r.metric): r.median for r in doc.results},
        )


def facts(doc: Document, e: EfficiencyRow, index: Index | None = None) -> Facts:
    index = index or Index.of(doc)
    t = index.targets[e.target]
    m = index.medians
    w, name = e.workload, e.target
    helper_s, wall = m.get((w, name, "helper_cpu_seconds")), m.get((w, name, "wall_seconds"))
    helper = str(t.details.get("helpers", "")).split(" (pid")[0]
    env = doc.environment
    driver = None
    acceleration = ""
    if e.cipher is not None and e.cipher.where == "kernel":
        # the driver the target's own cipher got once data went through it; runs stored
        # before targets recorded it have the environment's, read at the run's start
        driver = t.details.get(DRIVER_DETAIL) or env.driver(e.cipher.algorithm)
        acceleration = classify(driver) if driver else ""
    twin = twin_plain = None
    if t.medium == Medium.DEVICE:
        twin = m.get((w, RAM_PREFIX + name, "throughput"))
        twin_plain = m.get((w, RAM_PREFIX + "plain", "throughput"))
    return Facts(
        e=e,
        target=t,
        where="on RAM" if t.medium == Medium.RAM else "on the device",
        helper_cores=helper_s / wall if helper_s is not None and wall else None,
        helper=helper,
        cpu_utilization=m.get((w, name, "cpu_utilization")),
        cpu_count=env.cpu_count or 1,
        driver=driver,
        acceleration=acceleration,
        cpu_has_aes="aes" in env.cpu_flags,
        twin=twin,
        twin_plain=twin_plain,
    )


def judge(f: Facts) -> DiagnosedLimit:
    """The first rule that holds for one (target, workload), or UNKNOWN."""
    plain = f.e.plain
    loss = 1 - f.e.achieved / plain if plain else 0.0
    for rule, test in RULES:
        sentence = test(f)
        if sentence is not None:
            return DiagnosedLimit(f.e.workload, f.name, rule, sentence, f.e.efficiency, loss)
    return DiagnosedLimit(f.e.workload, f.name, Rule.UNKNOWN, _unknown(f), f.e.efficiency, loss)


def _qd_shift(curve: QdCurve) -> float | None:
    """Points of change in speed gained from the lowest depth to the highest
    (negative: lost), when the move is QD_SHIFT points or more and the two
    intervals do not overlap; else None."""
    first, last = curve.points[0], curve.points[-1]
    shift = last.change_percent - first.change_percent
    if abs(shift) < QD_SHIFT:
        return None
    lo, hi = (first, last) if shift > 0 else (last, first)
    if lo.change_high is not None and hi.change_low is not None and lo.change_high >= hi.change_low:
        return None
    return float(shift)


def _qd_sentences(target: str, curves: list[QdCurve]) -> list[str]:
    """One sentence per direction of move: the patterns whose cost shrinks, then those where it grows."""
    moves: dict[str, list[str]] = defaultdict(list)
    baseline = ""
    for c in curves:
        shift = _qd_shift(c)
        if shift is None:
            continue
        baseline = c.baseline or ""
        steps = ", ".join(f"{percent(p.change_percent)}% at QD{p.iodepth}" for p in c.points)
        moves["shrinks" if shift > 0 else "grows"].append(f"{c.rw} {c.bs // 1024} KiB: {steps}")
    out = []
    for way, why in (
        ("shrinks", "deeper queues hide a cost per request"),
        ("grows", f"the layer keeps up with parallel requests less well than {baseline}"),
    ):
        if moves[way]:
            out.append(
                f"{target}'s cost against {baseline} {way} with queue depth ({'; '.join(moves[way])}): {why}."
            )
    return out


MAX_SENTENCES = 2  # rules told per target, besides the queue-depth sentence


def diagnose(doc: Document) -> list[TargetDiagnosis]:
    by_target: dict[str, list[DiagnosedLimit]] = defaultdict(list)
    tmap = {t.name: t for t in doc.targets}
    index = Index.of(doc)
    for e in doc.efficiency:
        by_target[e.target].append(judge(facts(doc, e, index)))
    out = []
    for target, findings in by_target.items():
        groups: dict[Rule, list[DiagnosedLimit]] = defaultdict(list)
        for f in findings:
            groups[f.rule].append(f)
        # Known limits first; among them the commonest, then where the target lost most.
        ranked = sorted(
            groups.values(), key=lambda g: (g[0].rule is Rule.UNKNOWN, -len(g), -max(x.loss for x in g))
        )
        sentences = []
        for group in ranked[:MAX_SENTENCES]:
            worst = max(group, key=lambda x: x.loss)
            text = worst.sentence
            others = [x.workload for x in group if x is not worst]
            if others:
                text += f" The same at {_listed(others)}."
            sentences.append(text)
        rest = [x for g in ranked[MAX_SENTENCES:] for x in g]
        if rest:
            where = _listed(sorted({x.workload for x in rest}))
            if all(x.rule is Rule.UNKNOWN for x in rest):
                sentences.append(f"No rule explains {where} (the --json document's findings).")
            else:
                sentences.append(f"Other limits hold at {where} (the --json document's findings).")
        sentences += _qd_sentences(target, [c for c in doc.qd_curves if c.target == target])
        sentences += option_effects.sentences(doc, tmap[target]) if target in tmap else []
        out.append(TargetDiagnosis(target, sentences, [f.recorded() for f in findings]))
    # a variant with no efficiency row (no cipher ceiling measured) still has its option's effect
    for t in doc.targets:
        if t.name not in by_target:
            told = option_effects.sentences(doc, t)
            if told:
                out.append(TargetDiagnosis(t.name, told, []))
    return out


def _listed(names: list[str]) -> str:
    if len(names) > 4:
        return f"{', '.join(names[:3])} and {len(names) - 3} more"
    return ", ".join(names)
