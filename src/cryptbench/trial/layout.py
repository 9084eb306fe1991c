"""The data file a target's read trials read, written whole by fio before any clock
starts: one pass, at the run's I/O mode, from the file's start (a short one left by
a failed write goes first)."""

from __future__ import annotations

from cryptbench.backends.base import Target
from cryptbench.engines.fio import run_fio
from cryptbench.engines.jobs import render_layout
from cryptbench.model.errors import DiskFull, ProvisionError, TrialError
from cryptbench.trial.context import DATA_FILE, TrialContext, TrialSize
from cryptbench.trial.runner import ENOSPC_TEXT, job_options, target_lost


def lay_out(ctx: TrialContext, target: Target, slug: str, sized: TrialSize, seed: int) -> None:
    """Write `target`'s data file, as `sized` says (Sizing.layout_size), its job file kept as
    jobs/layout-`slug`.fio. A full filesystem stops the run (DiskFull); any other failure
    loses the target (ProvisionError)."""
    opts = job_options(ctx, target, seed, sized)
    layout = ctx.session.path("jobs", f"layout-{slug}.fio")
    layout.parent.mkdir(exist_ok=True)
    ctx.session.check_inside(target.path / DATA_FILE).unlink(missing_ok=True)
    layout.write_text(render_layout(opts))
    try:
        run_fio(layout, ctx.session)
    except TrialError as e:
        if ENOSPC_TEXT in str(e):
            raise DiskFull(
                f"the target filesystem filled up during the data file's layout on {target.name} "
                f"({ENOSPC_TEXT}); the run stopped"
            ) from None
        why = target_lost(target, "while the data file was written") or str(e)
        raise ProvisionError(f"could not write the data file on {target.name}: {why}") from None
