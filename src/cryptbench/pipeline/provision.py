"""Every target of a plan up and ready to measure: provisioned (as
trial/provisioned.Provisioned, which lays out each data file), proven encrypted, its
O_DIRECT probed and the I/O mode decided like for like; and what a dead run left
behind, recovered first. Shared by `run`, `serve` and `cleanup`."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from cryptbench.backends import REGISTRY, DirectIO, Target, helper_programs
from cryptbench.cipher import kernel
from cryptbench.engines.apps import AppWorkload
from cryptbench.machine import recovery
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.session import MARKER, Session, candidate_run_dirs, recover, scratch_root
from cryptbench.model.errors import ProvisionError
from cryptbench.model.result import TargetInfo
from cryptbench.pipeline.verify import marker_in_backing, probe_direct_io, probe_protection
from cryptbench.planning.plan import Plan
from cryptbench.trial.context import Progress
from cryptbench.trial.provisioned import Provisioned, decide_io_modes


def recover_stale(targets: list[Path], registry: Path | None = None) -> list[str]:
    """Tear down what dead runs left in these scratch spaces (their lock is free), and
    loop devices over files of run directories that are gone; what was removed, in words."""
    messages: list[str] = []
    programs = recovery.CORE_HELPERS | helper_programs()
    for run_dir in candidate_run_dirs(targets, registry):
        done = recover(run_dir, registry, programs)
        if done:
            messages.extend(done)
    for target in targets:
        root = scratch_root(target)
        if (root / MARKER).is_file():  # only a scratch root cryptbench made
            with signals_blocked():
                messages.extend(recovery.detach_orphans(root))
    return messages


def prove_encryption(session: Session, targets: dict[str, Target]) -> None:
    for t in targets.values():
        t.marker_in_backing = marker_in_backing(session, t)
    for t in targets.values():
        if not t.encrypted:
            continue
        if t.marker_in_backing:
            raise ProvisionError(
                f"plaintext written through {t.name} appeared in its backing storage: "
                "the target is not encrypted, refusing to measure it"
            )
        base = targets.get(t.baseline or "")
        # Without the positive control the absence of the marker proves nothing.
        t.encryption_verified = bool(base is not None and base.marker_in_backing)


def name_kernel_ciphers(targets: dict[str, Target], proc_crypto: str | None = None) -> None:
    """Each kernel-crypto target's cipher as the kernel serves it: the driver /proc/crypto
    names for its algorithm (`proc_crypto`: that file's text, read here unless given).
    Read once data has gone through every target (prove_encryption wrote through each),
    because the kernel instantiates a template such as xts(aes) on first use, choosing
    the registered implementation with the highest priority, and a target's figures owe
    much to which (generic C or the CPU's AES instructions). No record where /proc/crypto
    lists none: the diagnosis says so."""
    try:
        entries = kernel.parse(kernel.PROC_CRYPTO.read_text() if proc_crypto is None else proc_crypto)
    except OSError:
        return
    for t in targets.values():
        use = REGISTRY[t.backend].cipher_use
        if use is None or use.where != "kernel":
            continue
        found = kernel.selected(entries, use.algorithm)
        if found is not None:
            t.details[kernel.DRIVER_DETAIL] = found.driver


def probe_direct(session: Session, targets: dict[str, Target]) -> None:
    """What O_DIRECT does on each target, probed, beside what its backend declared."""
    for t in targets.values():
        declared = t.direct_io_reason
        t.direct_io, evidence = probe_direct_io(session, t)
        t.direct_io_reason = (
            f"{declared}; {evidence}" if declared and t.direct_io is not DirectIO.HONOURED else evidence
        )


def target_row(t: Target, direct: bool) -> TargetInfo:
    """What the store keeps of a provisioned target."""
    return TargetInfo(
        name=t.name,
        backend=t.backend,
        baseline=t.baseline,
        encrypted=t.encrypted,
        io_mode="direct" if direct else "buffered",
        direct_io=str(t.direct_io),
        direct_io_reason=t.direct_io_reason,
        marker_in_backing=t.marker_in_backing,
        encryption_verified=t.encryption_verified,
        details={**t.details, "helpers": ", ".join(f"{h.name} (pid {h.pid})" for h in t.helpers)},
        medium=t.medium,
        protection=t.protection,
    )


def provision_all(
    plan: Plan, session: Session, progress: Progress, stack: ExitStack
) -> tuple[Provisioned, str | None]:
    """Every target of the plan up, proven encrypted, its O_DIRECT probed and the
    I/O mode decided like for like; torn down when `stack` closes. Returns the
    targets and the note explaining the I/O mode."""
    provisioned = Provisioned(plan, session, progress)
    stack.callback(provisioned.close)
    for spec in plan.targets:
        progress.phase(f"provisioning {spec.name}")
        provisioned.up(spec)
    progress.phase("proving encryption")
    prove_encryption(session, provisioned.targets)
    name_kernel_ciphers(provisioned.targets)
    if plan.protection_probes:
        progress.phase("probing what each target protects, and its space")
        probe_protection(session, provisioned.targets)
    probe_direct(session, provisioned.targets)
    provisioned.direct, note = decide_io_modes(plan.io_mode, provisioned.targets)
    if all(isinstance(w, AppWorkload) and w.runs_commands for w in plan.suite.workloads):
        note = None  # the user's commands do their own I/O: cryptbench chooses no mode for them
    return provisioned, note
