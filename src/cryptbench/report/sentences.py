"""The sentences and rows of text that several renderers print alike: the run's header,
its precision line, the user's commands as hyperfine puts them, how the run stopped,
where the cipher ceilings came from, the summary and environment rows. Neutral: it
renders nothing and imports no renderer, so that no renderer imports another (the
terminal's answer, --details and the HTML and Markdown pages read the same words).
"""

from __future__ import annotations

from collections import defaultdict

from cryptbench.analysis import ranking
from cryptbench.analysis.document import results_by_key
from cryptbench.analysis.speed_change import change_words, percent, speed_change
from cryptbench.backends.luks_twin import twin_variant
from cryptbench.cipher.kernel import DRIVER_DETAIL, classify
from cryptbench.engines.metric_catalog import info
from cryptbench.model.json_types import JsonObject
from cryptbench.model.ranking_section import RankEntry
from cryptbench.model.result import Answer, Comparison, ComparisonKind, Document, Result, Stopping
from cryptbench.model.stack import LayerKind, Stack
from cryptbench.model.units import format_bytes, format_count_range, format_duration, format_value
from cryptbench.model.vocabulary import RunStatus
from cryptbench.planning.suite import command_name
from cryptbench.planning.twin_request import TWIN_SAID
from cryptbench.report.flag_sentences import flag_answer
from cryptbench.stats import estimates


def header(doc: Document) -> str:
    """Suite, targets, trials, time spent on them and the bytes the device wrote."""
    fleet = doc.plan.fleet
    kind = "fleet run" if fleet else "run"
    trials = f"{doc.trials.ok} trials"
    if doc.trials.failed:
        trials += f" (+{doc.trials.failed} failed)"
    if doc.stopping is not None:
        trials += f" in {format_duration(doc.stopping.seconds)}"
    text = f"{kind.capitalize()} {doc.run_id} ({doc.suite} suite"
    if fleet:
        text += f", {len(fleet['hosts'])} hosts"
    text += ")" if doc.status == RunStatus.COMPLETE else f", {doc.status})"
    text += f": {len(doc.targets)} targets, {trials}"
    dw = doc.device_writes
    if dw:
        text += f"; {dw.device} wrote {format_bytes(int(dw.bytes))}"
    return text


def stack_line(doc: Document) -> str | None:
    """The stack under the run's scratch space in one line (run --existing: under the
    volume it read); None for a run stored before runs recorded it."""
    volume = existing_stack(doc)
    if volume is not None:
        said = "Your files" if (doc.plan.existing or {}).get("kind") == "fuse" else "Your volume"
        return f"{said} {volume.path}: {volume.line()}"
    stack = doc.environment.stack
    return None if stack is None else f"Scratch space {stack.path}: {stack.line()}"


def existing_stack(doc: Document) -> Stack | None:
    """The stack under the volume a run --existing read; None for any other run."""
    existing = doc.plan.existing
    raw = existing.get("stack") if existing else None
    return Stack.from_json(raw) if isinstance(raw, dict) else None


def existing_answer(doc: Document) -> list[str]:
    """run --existing's answer: what decryption costs reads of the user's own data, against
    what is under its encryption (a volume's device, the same sectors; a FUSE mount's
    ciphertext, the same files); none for any other run."""
    existing = doc.plan.existing
    if not existing:
        return []
    fuse = existing.get("kind") == "fuse"
    what, base, same = _fuse_words(doc, existing) if fuse else _volume_words(doc, existing)
    out = []
    for section in doc.ranking:
        n = len(section.workloads)
        against = f"against {base}, {same}, over {n} read workload{'s' if n != 1 else ''}"
        mapping = existing.get("targets", {}).get("mapping") if not fuse else None
        for e in section.overall:
            # a flag set's shadow is held to the volume's own flags (flag_answer), not here
            if mapping is None or e.target == mapping:
                out.append(_decryption(what, e, against, base, doc.equivalence))
        for x in section.not_ranked:
            if mapping is None or x.target == mapping:
                out.append(f"What decryption costs reads {what} is not known: {x.reason}.")
    out += flag_answer(doc, existing)
    space = _space(existing) if fuse else None
    if space:
        out.append(space)
    if existing.get("left_out"):
        out.append(
            f"Writes were not run ({', '.join(existing['left_out'])}): they cannot be compared with "
            f"{base} without destroying your data; the notes say what can be measured."
        )
    return out


def _volume_words(doc: Document, existing: JsonObject) -> tuple[str, str, str]:
    """A dm-crypt volume's: what was read, what against, and what was the same."""
    volume = existing_stack(doc)
    crypt = next((x for x in volume.layers if x.kind == LayerKind.DM_CRYPT), None) if volume else None
    how = ", ".join(v for v in (crypt.detail("cipher"), crypt.detail("key")) if v) if crypt else ""
    what = f"on your volume {existing['mapping']}" + (f" ({how})" if how else "")
    return what, f"its raw device {existing['device']}", "the same sectors read through each"


def _fuse_words(doc: Document, existing: JsonObject) -> tuple[str, str, str]:
    """A FUSE mount's: what was read, what against, and what was the same."""
    stack = existing_stack(doc)
    where = stack.path if stack else existing["mountpoint"]
    what = f"of your files in {where} ({existing['overlay']})"
    n = existing.get("sample_files", 0)
    same = f"the same {n} file{'s' if n != 1 else ''} read through each"
    if not existing.get("paired"):
        same = f"every file read through each ({n} through the mount)"
    return what, f"their ciphertext in {existing['cipher_dir']}", same


def _space(existing: JsonObject) -> str | None:
    """What the ciphertext of the directory's files takes beside their plaintext."""
    space = existing.get("space")
    if not isinstance(space, dict) or not space.get("plain_bytes"):
        return None
    plain, cipher = int(space["plain_bytes"]), int(space["cipher_bytes"])
    first = " (of the first files a walk reached)" if space.get("cut") else ""
    return (
        f"Their ciphertext takes {format_bytes(cipher)} for {format_bytes(plain)} of plaintext"
        f"{first}: {percent((cipher / plain - 1) * 100, 1)}% space."
    )


def _decryption(what: str, e: RankEntry, against: str, base: str, margin: float | None) -> str:
    """Decryption's cost to reads in one sentence, as its interval lets it be said."""
    change = ranking.change(e)
    if estimates.equivalent(estimates.Ratio(e.ratio, e.ci_low, e.ci_high), margin):
        within = f"±{(margin or 0) * 100:g}%"
        return f"Decryption costs reads {what} nothing measurable: {change}, within {within}, {against}."
    if e.ci_high is not None and e.ci_high < 1:
        return f"Decryption's cost to reads {what}: {change} {against}."
    if e.ci_low is not None and e.ci_low > 1:
        return f"Reads {what} ran faster than {base}: {change} {against}; the diagnosis says why."
    return (
        f"What decryption costs reads {what} is not clear yet: {change} {against}, an interval "
        "that holds no change (more trials narrow it: --repeats, or adaptive repetition)."
    )


def the_answer(doc: Document) -> list[str]:
    """What the user asked, in words, before any figure: that the scratch space is already
    encrypted where it is, then the ranking (run --existing: decryption's cost)."""
    first = [said for said in (twin_line(doc), scratch_encrypted(doc)) if said]
    return [*first, *(existing_answer(doc) or ranking.sentences(doc))]


def twin_line(doc: Document) -> str | None:
    """Which volume a run --existing --ram's twin copies, and how, first: its targets'
    names alone do not say that they stand in for the user's own volume."""
    twins = sorted({t.backend for t in doc.targets if twin_variant(t.backend)})
    said = next((n for n in doc.notes if n.startswith(TWIN_SAID)), None)
    if not twins or said is None:
        return None
    return f"{', '.join(twins)} is {said}."


def scratch_encrypted(doc: Document) -> str | None:
    """Said before the answer where a layer under the scratch space already encrypts it
    (not for run --existing, whose scratch space holds only its job files)."""
    if doc.plan.existing:
        return None
    stack = doc.environment.stack
    said = None if stack is None else stack.encrypted_sentence()
    return None if said is None else said[0].upper() + said[1:] + "."


def _halfwidths(values: list[float]) -> str:
    lo, hi = min(values) * 100, max(values) * 100
    low, high = percent(lo, 1, sign=False), percent(hi, 1, sign=False)
    return f"±{low}%" if low == high else f"±{low}% to ±{high}%"


# What stopped a comparison, in the order the precision line tells them.
STOPPED = (
    "precision",
    "equivalent",
    "max-time",
    "max-bytes",
    "max-repeats",
    "dropped",
    "target-lost",
    "open",
)


def _stopped(reason: str, answers: list[Answer], rule: JsonObject, margin: float | None) -> str:
    """One group of the precision line: how many, what stopped them, and how far they got."""
    n = len(answers)
    if reason == "precision":
        return f"{n} answered to ±{rule['precision'] * 100:g}%"
    if reason == "equivalent":
        return f"{n} equal within ±{(margin or 0) * 100:g}%"
    why = {
        "max-time": f"stopped by the {format_duration(rule['max_time'] or 0)} budget",
        "max-bytes": f"stopped by the {format_bytes(rule['max_bytes'] or 0)} budget",
        "max-repeats": f"stopped at {rule['max_repeats']} trials",
        "dropped": "dropped to fit the time budget",
        "target-lost": "stopped: a target was lost",
        "open": "still open when the run ended",
    }.get(reason, f"stopped by {reason}")
    trials = [a.samples for a in answers]
    widths = [a.halfwidth for a in answers if a.halfwidth is not None]
    # at max-repeats the trials are what stopped them: said once
    tail = (
        ""
        if reason == "max-repeats"
        else f" after {format_count_range(trials)} trial{'s' if max(trials) != 1 else ''}"
    )
    return f"{n} {why}{tail}" + (f" ({_halfwidths(widths)})" if widths else " (no interval)")


def precision_line(doc: Document) -> str:
    """How many comparisons the run answered, and how: to the asked precision, equal to
    their baseline within the equivalence margin, or stopped short, by what and how far
    they got."""
    st = doc.stopping
    base = [c for c in doc.comparisons if c.kind == ComparisonKind.BASELINE]
    reached = [c.precision for c in base if c.precision is not None]
    margin = doc.equivalence
    if st and st.rule["precision"] is not None:
        groups: dict[str, list[Answer]] = {}
        for a in st.answers:
            groups.setdefault(a.stopped_by or "open", []).append(a)
        order = [*STOPPED, *sorted(set(groups) - set(STOPPED))]
        return ", ".join(_stopped(r, groups[r], st.rule, margin) for r in order if r in groups)
    equal = [c for c in base if estimates.equivalent(estimates.Ratio(c.ratio, c.ci_low, c.ci_high), margin)]
    also = f", {len(equal)} of them equal within ±{(margin or 0) * 100:g}%" if equal else ""
    if reached:
        return f"{len(base)} comparisons, fixed trials: {_halfwidths(reached)}{also}"
    return f"{len(base)} comparisons, without intervals"


def _time(seconds: float, digits_of: float | None = None) -> str:
    """Seconds to three figures, in ms below one second; `digits_of` sets the scale
    (an interval's bounds are written like its median)."""
    scale = digits_of if digits_of is not None else seconds
    if scale < 1:
        ms, ref = seconds * 1000, scale * 1000
        return f"{ms:.0f} ms" if ref >= 100 else f"{ms:.1f} ms" if ref >= 10 else f"{ms:.2f} ms"
    return f"{seconds:.0f} s" if scale >= 100 else f"{seconds:.1f} s" if scale >= 10 else f"{seconds:.2f} s"


def _bare(text: str) -> str:
    return text.rsplit(" ", 1)[0]


def command_lines(doc: Document) -> list[str]:
    """Each of the user's commands as hyperfine would put it: how long it took on the
    baseline, with the median's interval; then on each target its change in speed with
    that change's interval (the tool's one convention: negative is slower), and beside it
    the change in time, labelled as such."""
    apps = doc.plan.apps
    results = results_by_key(doc)
    lines = []
    for w in doc.plan.workloads:
        desc = apps.get(w) or {}
        if desc.get("app") != "command":
            continue
        phases = desc.get("phases", [])
        if len(phases) != 1:
            text = f"{w} ({' → '.join(p['name'] for p in phases)})"
        elif w == command_name(phases[0]["command"]):  # run --command's: named after it
            text = f"`{phases[0]['command']}`"
        else:
            text = f"{w} (`{phases[0]['command']}`)"
        parts = []
        for t in doc.targets:
            r = results.get((w, t.name, "seconds"))
            if t.baseline or r is None:
                continue
            interval = ""
            if r.ci_low is not None and r.ci_high is not None:
                interval = f" [{_bare(_time(r.ci_low, r.median))}, {_bare(_time(r.ci_high, r.median))}]"
            parts.append(f"took {_time(r.median)}{interval} on {t.name}")
        changes = []
        for c in doc.comparisons:
            if c.workload != w or c.kind != ComparisonKind.BASELINE or c.ratio <= 0:
                continue
            # written as every figure is: a change in speed (the ratio is the baseline's seconds
            # over the target's); the change in time beside it, labelled as time
            pct, iv, _ = speed_change(c)
            time_pct = (1 / c.ratio - 1) * 100
            change = f"on {c.target} {change_words(pct, iv)} in speed ({time_pct:+.0f}% in time)"
            against = next((t.baseline for t in doc.targets if t.name == c.target), None)
            if against and against not in {t.name for t in doc.targets if not t.baseline}:
                change += f" against {c.baseline}"
            changes.append(change)
        if parts:
            lines.append(f"{text} {', '.join(parts)}" + (f"; {', '.join(changes)}" if changes else "") + ".")
    return lines


def _pm(x: float | None) -> str:
    return "no interval" if x is None else f"±{x * 100:.1f}%"


def stopping_lines(st: Stopping | None) -> list[str]:
    """How the run decided how many trials to run, and what stopped each comparison short."""
    if st is None:
        return []
    rule, answers = st.rule, st.answers
    spent = (
        # The device counter here spans the whole trial phase, so it also holds
        # the resets of stateful targets between trials, which the per-trial
        # counter printed above leaves out.
        f"the trial phase wrote {format_bytes(st.bytes_written)} "
        + (
            "(the device counter, resets between trials included) "
            if st.bytes_source == "device"
            else "(as the workloads counted) "
        )
        + f"in {format_duration(st.seconds)}"
    )
    budgets = []
    if rule["max_bytes"] is not None:
        budgets.append(f"{format_bytes(rule['max_bytes'])} written")
    if rule["max_time"] is not None:
        budgets.append(format_duration(rule["max_time"]))
    limit = f" (budget: {', '.join(budgets)})" if budgets else ""
    if rule["precision"] is None:
        lines = [f"Repetition: {rule['max_repeats']} trials per workload and target, fixed; {spent}{limit}."]
    else:
        precise = [a for a in answers if a.stopped_by in ("precision", "equivalent")]
        lines = [
            f"Repetition: adaptive to ±{rule['precision'] * 100:g}% "
            f"({rule['min_repeats']} to {rule['max_repeats']} trials): {len(precise)} of {len(answers)} "
            f"comparisons got there"
            + (f" in {format_count_range([a.samples for a in precise])} trials" if precise else "")
            + f"; {spent}{limit}."
        ]
    short = [a for a in answers if a.stopped_by not in ("precision", "equivalent", "fixed-repeats")]
    for a in short:
        against = f" vs {a.baseline}" if a.baseline else ""
        why = a.stopped_by or "the run ended"
        lines.append(
            f"  {a.target}{against}, {a.workload}: {_pm(a.halfwidth)} after {a.samples} "
            f"trial(s), stopped by {why}"
        )
    return lines


def sources(doc: Document) -> list[str]:
    """Where the cipher ceilings came from: each source once, with the targets that use it,
    and for a kernel cipher the driver that served those targets (/proc/crypto's name)."""
    users: dict[str, list[str]] = defaultdict(list)
    for e in doc.efficiency:
        if e.target not in users[e.ceiling_source]:
            users[e.ceiling_source].append(e.target)
    details = {t.name: t.details for t in doc.targets}
    lines = []
    for source, ts in users.items():
        drivers = dict.fromkeys(d for t in ts if (d := details.get(t, {}).get(DRIVER_DETAIL)))
        served = "".join(f"; the kernel's driver: {d} ({classify(d)})" for d in drivers)
        lines.append(f"{', '.join(ts)}: {source}{served}")
    return lines


def _value(v: float, unit: str) -> str:
    return format_value(v, unit) if unit else f"{v:.3g}"


def median_text(r: Result) -> str:
    unit = r.unit
    text = _value(r.median, unit)
    if r.ci_low is None or r.ci_high is None:
        return f"{text} (no interval)"
    return f"{text} [{_value(r.ci_low, unit)}, {_value(r.ci_high, unit)}]"


def change_text(c: Comparison) -> str:
    """Speed against the baseline: +12% is faster, -40% slower (for any metric's direction),
    in the tool's one convention (report/figures.py)."""
    pct, interval, _ = speed_change(c)
    return change_words(pct, interval)


def summary_rows(doc: Document) -> list[dict[str, str]]:
    """The summary table as text cells, per workload and target: the workload (with its metric
    when not throughput), the median and its interval ("" when the target failed), the
    baseline and the change against it ("" without a comparison). The HTML page shows it too."""
    results = results_by_key(doc)
    comps = {(c.workload, c.target, c.baseline): c for c in doc.comparisons}
    rows = []
    for w in doc.plan.workloads:
        if not any(r.workload == w for r in doc.results):
            continue
        metric = doc.plan.primary(w)
        label = w if metric == "throughput" else f"{w} ({info(metric).label})"
        for t in doc.targets:
            r = results.get((w, t.name, metric))
            c = comps.get((w, t.name, t.baseline)) if t.baseline and r else None
            rows.append(
                {
                    "workload": label,
                    "target": t.name,
                    "median": median_text(r) if r else "",
                    "against": t.baseline or "" if c else "",
                    "change": change_text(c) if c else "",
                }
            )
    return rows


def _version_rows(versions: dict[str, str]) -> list[tuple[str, str]]:
    """One row per program: the backends that run it, and its version."""
    by_program: dict[str, list[str]] = defaultdict(list)
    for backend, version in versions.items():
        by_program[version].append(backend)
    return [(", ".join(names), version) for version, names in by_program.items()]


def environment_rows(doc: Document) -> list[tuple[str, str]]:
    """What a reader needs to judge whether these figures apply to them, as label and value."""
    env, plan = doc.environment, doc.plan
    fs = env.target_filesystem
    rows = [
        ("host", env.hostname),
        (
            "CPU",
            f"{env.cpu_model}, {env.cpu_count} cores; flags: {', '.join(env.cpu_flags)}",
        ),
        ("memory", format_bytes(env.memory_bytes) if env.memory_bytes else None),
        ("OS, kernel", f"{env.os}, {env.kernel}"),
        ("kernel's xts(aes)", env.driver("xts(aes)")),
        (
            "scratch space",
            f"{plan.target_dir}: {env.stack.line()}"
            if env.stack is not None
            else f"{plan.target_dir} on {fs.get('source')} ({fs.get('fstype')}, "
            f"{'rotational' if fs.get('rotational') == '1' else 'non-rotational'})"
            if fs
            else plan.target_dir,
        ),
        ("fio", f"{env.fio}, ioengine {env.ioengine}"),
        ("gocryptfs", env.gocryptfs),  # runs stored before Backend.version()
        *_version_rows(env.versions),
        ("cache drop", env.cache_drop),
        ("data per trial", format_bytes(plan.size) if plan.size else None),
        ("seed", plan.raw.get("seed")),  # none at all in a run stored without one
        ("Python, cryptbench", f"{env.python}, {doc.tool_version}"),
    ]
    return [(k, str(v)) for k, v in rows if v not in (None, "", "None")]
