"""The stopping rule a run's flags ask for: a fixed count of rounds, or adaptive rounds
until every comparison is answered to the precision asked, within the budgets of bytes
and time (the defaults, and why, beside each)."""

from __future__ import annotations

from pathlib import Path

from cryptbench.machine.session import free_bytes
from cryptbench.model.errors import UsageError
from cryptbench.planning.quantities import DEFAULT_PRECISION_FRACTION, AsksStopping, Quantities
from cryptbench.planning.suite import Suite, check_repeats_range
from cryptbench.stats.stopping import OVERRUNS, StoppingRule

DEFAULT_MIN_REPEATS = 3
DEFAULT_MAX_REPEATS = 10
# Adaptive runs' default budgets. Bytes: a tenth of the free space, at most
# 8 GiB (wear is the user's cost; more only when asked, --max-bytes). Time:
# five minutes of trials: on the 2-core development VM the default run's first
# round of 42 trials (seven targets, the quick suite, each trial stopped at
# twice the trial time) took about 80 s, so its three rounds fit with room for
# a fourth where the ranking is open; four minutes did not, and every run
# dropped workloads. With provisioning, the probes, the data files and the
# teardown the default run takes about seven. A fixed count (--repeats, a
# study's suite) is run in full unless a budget is given.
DEFAULT_MAX_BYTES_FRACTION = 0.10
DEFAULT_MAX_BYTES_CAP = 8 << 30
DEFAULT_MAX_TIME = 300.0  # seconds


def stopping_rule(
    suite: Suite, request: AsksStopping, q: Quantities, *, target_dir: Path | None
) -> StoppingRule:
    """Adaptive unless the number of rounds is fixed: by --repeats, or by a
    suite that reproduces a study's count (unless --precision asks otherwise).
    `q`: the request's quantities, parsed (its byte budget, where the run takes one).

    Without a local `target_dir` (a fleet run writes on its hosts) there is no
    default byte budget: each host writes at most max-repeats trials' data."""
    repeats, precision = request.repeats, q.precision
    min_repeats, max_repeats = request.min_repeats, request.max_repeats
    overrun = request.overrun
    adaptive_flags = [
        f
        for f, v in (
            ("--precision", precision),
            ("--min-repeats", min_repeats),
            ("--max-repeats", max_repeats),
        )
        if v is not None
    ]
    if repeats is not None and adaptive_flags:
        raise UsageError(
            f"--repeats fixes the number of trials; {adaptive_flags[0]} is for adaptive repetition: give one"
        )
    budget, seconds, margin = q.max_bytes, q.max_time, q.equivalence
    if overrun not in OVERRUNS:
        raise UsageError(f"--overrun must be one of {', '.join(OVERRUNS)}")
    fixed = repeats if repeats is not None else (None if adaptive_flags else suite.repeats)
    if fixed is not None:
        check_repeats_range(fixed, "--repeats")
        return StoppingRule(None, fixed, fixed, budget, seconds, margin, overrun)
    if budget is None and target_dir is not None:
        budget = default_max_bytes(target_dir)
    if seconds is None:
        seconds = DEFAULT_MAX_TIME
    fraction = q.precision if q.precision is not None else DEFAULT_PRECISION_FRACTION
    least = min_repeats if min_repeats is not None else DEFAULT_MIN_REPEATS
    most = max_repeats if max_repeats is not None else max(DEFAULT_MAX_REPEATS, least)
    check_repeats_range(least, "--min-repeats")
    check_repeats_range(most, "--max-repeats")
    if least < 2:
        raise UsageError("--min-repeats must be at least 2: one trial has no interval to judge")
    if most < least:
        raise UsageError(f"--max-repeats {most} is below --min-repeats {least}")
    return StoppingRule(fraction, least, most, budget, seconds, margin, overrun)


def default_max_bytes(target_dir: Path) -> int:
    """The byte budget of an adaptive run that gives none: a tenth of the free space, at most 8 GiB."""
    return min(int(free_bytes(target_dir) * DEFAULT_MAX_BYTES_FRACTION), DEFAULT_MAX_BYTES_CAP)
