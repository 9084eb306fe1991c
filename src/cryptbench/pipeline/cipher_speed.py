"""The ciphers' own speed here (`cryptbench cipher`, and the figures a run takes of its
layers' ciphers): the ceilings a stack is held to.

Userspace: OpenSSL (cipher/userspace.py), per data unit, one core and all
cores. Kernel: the driver each algorithm the backends need resolves to
(/proc/crypto), and its speed: through AF_ALG where the kernel offers it,
otherwise as the encrypted stack on RAM (fscrypt against ext4-loop, both in an
image on a loop device over a tmpfs file), where no disk hides the cipher.
"""

from __future__ import annotations

import statistics
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from cryptbench.backends import REGISTRY, Target, TargetSpec
from cryptbench.backends.ext4image import image_size
from cryptbench.cipher import cryptsetup_bench, kernel, userspace
from cryptbench.cipher.ceilings import separate
from cryptbench.cipher.cipher_document import (
    SCHEMA,
    AfAlg,
    AfAlgFigure,
    CipherDocument,
    KernelCiphers,
    RamStack,
    StackCipher,
    StackFigure,
    Unmeasured,
)
from cryptbench.engines.fio import parse_fio_json, probe_ioengine, run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.machine.session import Session
from cryptbench.measure import resident
from cryptbench.measure.cache import drop_caches
from cryptbench.model.errors import Interrupted
from cryptbench.model.vocabulary import Medium
from cryptbench.pipeline.lifecycle import Lifecycle
from cryptbench.planning.plan import RAM_SLACK
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.trial.context import NullProgress, Progress

DEFAULT_SECONDS = 0.3  # per measurement
DEFAULT_REPEATS = 3
DEFAULT_RAM_SIZE = "64M"  # bytes written and read per RAM-stack trial
RAM_BACKENDS = ("ext4-loop", "fscrypt")  # the same image stack without and with the kernel cipher
RAM_BLOCK = 1 << 20  # bytes per I/O of the RAM-stack jobs
RAM_DEPTH = 8


def ram_stack_bytes(size: int) -> int:
    """The tmpfs the RAM stack needs for `size`-byte trials: both images, and a run's slack."""
    return sum(image_size(size) for _ in RAM_BACKENDS) + RAM_SLACK


def ram_stack_unavailable() -> str | None:
    for name in RAM_BACKENDS:
        avail = REGISTRY[name].probe()
        if not avail.ok:
            return f"{name} cannot run here: {avail.reason}"
    return None


def _ram_trial(session: Session, target: Target, rw: str, size: int, engine: str, seed: int) -> float:
    job = session.path("jobs", f"cipher-{target.backend}-{rw}.fio")
    job.parent.mkdir(exist_ok=True)
    spec = WorkloadSpec(f"ram-{rw}", rw, RAM_BLOCK, RAM_DEPTH)
    # Buffered: fscrypt does not honour O_DIRECT. Writes end with fsync (the
    # cipher runs at writeback); reads start from a dropped cache (the cipher
    # runs as the pages come in). The tmpfs under the loop device stays.
    opts = JobOptions(target.path / "cipher-data", size, False, engine, False, seed)
    job.write_text(render_job(spec, opts))
    drop_caches([])
    return parse_fio_json(run_fio(job, session)).throughput


def measure_ram_stack(target_dir: Path, size: int, repeats: int, progress: Progress) -> RamStack:
    """fscrypt and ext4-loop on RAM, write then read, `repeats` times in alternating order."""
    samples: dict[tuple[str, str], list[float]] = {
        (b, rw): [] for b in RAM_BACKENDS for rw in ("write", "read")
    }
    with Lifecycle(progress) as life:
        session = life.open(target_dir, recover=False)  # recovery is run's and cleanup's, not cipher's
        session.ram_bytes = ram_stack_bytes(size)
        with ExitStack() as stack:
            targets: dict[str, Target] = {}
            for name in RAM_BACKENDS:
                progress.phase(f"provisioning ram:{name}")
                spec = TargetSpec(name, medium=Medium.RAM)
                targets[name] = stack.enter_context(REGISTRY[name].provision(session, spec, size))
            engine = probe_ioengine(session.path("ioengine-probe"), session)
            stack.enter_context(resident.hold(resident.program_files("fio")))  # measure/resident.py
            for i in range(repeats):
                order = RAM_BACKENDS if i % 2 == 0 else tuple(reversed(RAM_BACKENDS))
                for name in order:
                    for rw in ("write", "read"):
                        progress.phase(f"ram:{name} {rw}, round {i + 1} of {repeats}")
                        samples[(name, rw)].append(_ram_trial(session, targets[name], rw, size, engine, i))
    signum = life.last_signal()
    if signum is not None:
        raise Interrupted(signum)
    median = {k: statistics.median(xs) for k, xs in samples.items()}
    rows = [StackFigure(f"ram:{name}", rw, median[(name, rw)], xs) for (name, rw), xs in samples.items()]
    ciphers = []
    for rw in ("write", "read"):
        enc, plain = median[("fscrypt", rw)], median[("ext4-loop", rw)]
        est = separate(enc, plain)
        explanation = (
            "1/cipher = 1/(fscrypt on RAM) - 1/(ext4-loop on RAM)"
            if est is not None
            else "fscrypt on RAM was not slower than ext4-loop on RAM: the cipher's cost is noise"
        )
        ciphers.append(StackCipher("xts(aes)", rw, enc, plain, est, explanation))
    return RamStack(True, "", size, RAM_BLOCK, RAM_DEPTH, rows, ciphers)


def measure_af_alg(seconds: float, repeats: int) -> tuple[list[AfAlgFigure], list[Unmeasured]]:
    """Each kernel cipher per data unit on one core and with a request in flight on every
    core (dm-crypt's workqueue; fscrypt's writeback threads), like OpenSSL's figures; and
    the algorithms the kernel refused, with its reason."""
    rows, skipped = [], []
    for case in kernel.AF_ALG_CASES:
        for unit in case.units:
            try:
                for cores in dict.fromkeys((1, userspace.cores())):
                    xs = [
                        kernel.af_alg_throughput(
                            case.algorithm, case.key_bytes, unit, seconds, cores, case.iv_bytes, case.kind
                        )
                        for _ in range(repeats)
                    ]
                    rows.append(
                        AfAlgFigure(
                            case.algorithm, case.key_bytes * 8, unit, cores, statistics.median(xs), xs
                        )
                    )
            except OSError as e:
                why = (
                    f"the kernel refused {case.algorithm} through AF_ALG ({e.strerror}): not built, no module"
                )
                skipped.append(Unmeasured(case.algorithm, unit, why))
                break
    return rows, skipped


def measure(
    *,
    seconds: float = DEFAULT_SECONDS,
    repeats: int = DEFAULT_REPEATS,
    kernel_stack: bool = True,
    cryptsetup: bool = True,
    ram_size: int = 64 << 20,
    target_dir: Path = Path("/var/tmp"),
    cells: list[tuple[userspace.CipherCase, int]] | None = None,
    progress: Progress | None = None,
) -> CipherDocument:
    """The cipher document: userspace figures (each case on one core and on
    all, or the (case, workers) `cells` given), kernel drivers and kernel figures, and
    (with `cryptsetup`) what `cryptsetup benchmark` says of the same kernel ciphers."""
    progress = progress or NullProgress()
    if cells is None:
        cells = userspace.grid(userspace.CASES, (1, userspace.cores()))
    ok = []
    skipped = []
    for c in dict.fromkeys(c for c, _w in cells):
        why = userspace.unavailable(c)
        if why is None:
            ok.append(c)
        else:
            skipped.append(Unmeasured(c.name, c.unit, why))
    cells = [(c, w) for c, w in cells if c in ok]
    progress.phase(f"userspace ciphers: {len(cells)} figures x {repeats}")
    engine = userspace.engine()
    measured = userspace.measure(cells, seconds, repeats, engine)
    af_alg_why = kernel.af_alg_unavailable()
    # what times AF_ALG here: a C loop, or Python (lower bounds)
    af_alg = AfAlg(af_alg_why is None, af_alg_why or "", kernel.af_alg_engine())
    if af_alg_why is None:
        progress.phase("kernel ciphers through AF_ALG")
        rows, refused = measure_af_alg(seconds, repeats)
        af_alg = replace(af_alg, results=rows, skipped=refused)
    setup = None
    if cryptsetup:
        progress.phase("cryptsetup benchmark")
        setup = cryptsetup_bench.measure()
    why = ram_stack_unavailable()
    if not kernel_stack:
        ram = RamStack(False, "not asked (--no-kernel-stack)")
    elif why is not None:
        ram = RamStack(False, why)
    else:
        ram = measure_ram_stack(target_dir, ram_size, repeats, progress)
    # Read last: the kernel lists a template such as xts(aes) once something instantiated
    # it, here AF_ALG's sockets and the RAM stack's fscrypt; AF_ALG got the same driver.
    drivers, missing = kernel.drivers()
    return CipherDocument(
        schema=SCHEMA,
        library=userspace.library(engine),
        engine=engine,
        lower_bounds=userspace.lower_bounds(engine),
        cores=userspace.cores(),
        seconds=seconds,
        repeats=repeats,
        userspace=[m.figure() for m in measured],
        unavailable=skipped,
        kernel=KernelCiphers([d.info() for d in drivers], missing, af_alg, ram, setup),
    )
