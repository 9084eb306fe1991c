"""planning/quantities.py: a request's text in bytes, seconds and fractions, parsed once,
each refusal naming its flag."""

from __future__ import annotations

import pytest

from cryptbench.model.errors import UsageError
from cryptbench.planning.quantities import (
    TRIAL_TIME_VARIABLE,
    Quantities,
    checked_size,
    run_quantities,
    stopping_quantities,
    trial_seconds,
)
from cryptbench.planning.request import RunRequest


def test_a_run_request_in_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRIAL_TIME_VARIABLE, raising=False)
    r = RunRequest(
        size="64M", max_bytes="1G", max_time="2m", trial_time="1.5s", precision="2%", equivalence="1%"
    )
    assert run_quantities(r) == Quantities(0.02, 0.01, 120.0, 64 << 20, 1 << 30, 1.5)


def test_what_is_not_given_stays_unset_but_the_margin_and_the_trial_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TRIAL_TIME_VARIABLE, raising=False)
    assert run_quantities(RunRequest()) == Quantities(None, 0.03, None, None, None, 1.0)
    monkeypatch.setenv(TRIAL_TIME_VARIABLE, "0")
    assert run_quantities(RunRequest()).trial_time == 0.0
    monkeypatch.setenv(TRIAL_TIME_VARIABLE, "250ms")
    with pytest.raises(UsageError, match=f"^{TRIAL_TIME_VARIABLE} '250ms' is not a duration"):
        run_quantities(RunRequest())


@pytest.mark.parametrize(
    ("field", "text", "said"),
    [
        ("size", "64X", "--size '64X' has an unknown unit 'X'"),
        ("max_bytes", "0", "--max-bytes must be more than zero"),
        ("max_time", "5q", "--max-time '5q' is not a duration"),
        ("trial_time", "11m", "--trial-time 11m is longer than 10 min"),
        ("precision", "500%", "--precision must be from 0.1% to 50%, not 500%"),
        ("equivalence", "0%", "--equivalence must be from 0.1% to 50%, not 0%"),
    ],
)
def test_each_refusal_names_its_flag(field: str, text: str, said: str) -> None:
    with pytest.raises(UsageError) as e:
        run_quantities(RunRequest(**{field: text}))  # type: ignore[arg-type]
    assert str(e.value).startswith(said), e.value


def test_a_fleet_request_has_only_the_stopping_quantities() -> None:
    class Fleet:
        repeats, min_repeats, max_repeats, overrun = None, None, None, "drop"
        precision, equivalence, max_time = "10%", None, "1h"

    assert stopping_quantities(Fleet()) == Quantities(0.1, 0.03, 3600.0)


def test_a_data_file_out_of_range_is_refused_in_the_units_it_was_read_in() -> None:
    checked_size(1 << 20)
    with pytest.raises(UsageError, match=r"^--size 512.0 KiB is out of range"):
        checked_size(512 << 10)
    assert trial_seconds("0s") == 0.0
