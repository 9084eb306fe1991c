"""Progress where stderr is not a terminal: plain lines, one per round and one a minute."""

import io

from rich.console import Console

from cryptbench.planning.suite import WorkloadSpec
from cryptbench.report.progress import RichProgress
from cryptbench.trial.context import TrialSpec


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _spec() -> TrialSpec:
    w = WorkloadSpec(name="seq1m-q8-read", rw="read", bs=1 << 20, iodepth=8)
    return TrialSpec(seq=0, block=0, repeat=0, workload=w, target="plain")


def test_a_pipe_gets_a_line_per_round_and_per_minute() -> None:
    out, clock = io.StringIO(), Clock()
    with RichProgress(Console(file=out, force_terminal=False, width=200), clock=clock) as p:
        p.phase("provisioning plain")
        p.add_trials(4)
        p.round_started(1, 300.0)
        for _ in range(3):
            clock.now += 25
            p.trial_done(_spec(), ok=True)  # the third, 75 s after the round's line, prints one
        p.trial_done(_spec(), ok=False)
        p.add_trials(2)
        p.round_started(2, 180.0)
    lines = out.getvalue().splitlines()
    assert lines == [
        "provisioning plain…",
        "trials: round 1, 0 done of 4 planned so far; 5 min of the time budget left",
        "trials: round 1, 3 done of 4 planned so far; 3 min 45 s of the time budget left",
        "trials: round 2, 4 done (1 failed) of 6 planned so far; 3 min of the time budget left",
    ]


def test_a_terminal_gets_the_bar_and_no_lines() -> None:
    out = io.StringIO()
    with RichProgress(Console(file=out, force_terminal=True, width=100)) as p:
        p.add_trials(1)
        p.round_started(1, None)
    assert "trials: round" not in out.getvalue()


def test_a_note_is_said_at_once_though_trials_are_showing() -> None:
    out = io.StringIO()
    with RichProgress(Console(file=out, force_terminal=False, width=200), clock=Clock()) as p:
        p.add_trials(4)
        p.phase("not shown while trials run")
        p.say("dropped rnd4k-q1-read to fit")
    assert out.getvalue().splitlines() == ["note: dropped rnd4k-q1-read to fit"]
