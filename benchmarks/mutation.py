"""Mutation check of the modules that decide what a user reads: does the unit suite fail
when their code is wrong? (issue 43, "A suite that fails when the code is wrong")

mutmut (pinned in the dev dependencies) makes every small mutation it knows of each
function of the modules below (`<` for `<=`, a constant changed, a branch's condition
negated, ...) and runs the unit tests that reach that function against each. A mutant
is killed when a test fails, survived when every test passes; "no tests" means no unit
test reaches that function at all. The score is killed / (killed + survived).

It runs on a copy of the committed tree (HEAD), never on the work tree, and is not
part of `make test` (minutes to an hour, by the modules asked):

    .venv/bin/python benchmarks/mutation.py                       # every deciding module
    .venv/bin/python benchmarks/mutation.py --modules stats,analysis/ranking.py
    .venv/bin/python benchmarks/mutation.py --survivors           # and list what survived
    .venv/bin/python benchmarks/mutation.py --modules analysis/ranking.py \
        --tests tests/unit/analysis/test_ranking.py,tests/unit/report/test_answer_console.py  # fewer

A narrower --tests runs faster (a module that many golden tests reach runs all of them
per mutant), but its score is a floor: a mutant that survives it may still be killed by
a test left out, so its survivors are run again against tests/unit (`--recheck`).

The smoke mode (--smoke) mutates one small module against its own test file, so that
`make test` can hold the script to working (tests/unit/support/test_benchmarks_compute.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

REPO = Path(__file__).resolve().parent.parent
# The modules whose decisions a user acts on: the ranking, the statistics, the stopping
# rule and the allocator that applies it, the protection probes and the tamper probe, the
# diagnosis, and the warnings' rules and words.
DECIDING = (
    "stats/estimates.py",
    "stats/stopping.py",
    "trial/allocator.py",
    "analysis/ranking.py",
    "analysis/diagnosis.py",
    "analysis/warning_rules.py",
    "model/warning_kinds.py",
    "protection/probes.py",
    "protection/tamper.py",
)
# 54 mutants, with every status a real pass reports (killed, survived, no tests): `--smoke`
# took 28 s here, against 72 s for model/units.py's 191 mutants, one after the other beside a lab guest
SMOKE = ("measure/device.py", "tests/unit/measure/test_device.py")
SCHEMA_TEXT = "tests/unit/report/test_json_schema.py::test_the_shipped_schema_is_the_generated_one"
# this script's own smoke, which copies the tree from git: the mutants' copy is no repository
MUTATION_SMOKE = "tests/unit/support/test_benchmarks_compute.py::test_the_benchmark_runs[mutation.py]"


def _source(module: str) -> str:
    name = module if module.endswith(".py") else f"{module}.py"
    path = REPO / "src" / "cryptbench" / name
    if not path.exists():
        raise SystemExit(f"mutation.py: no module src/cryptbench/{name}")
    return f"src/cryptbench/{name}"


def _config(sources: list[str], tests: list[str], tree: list[str]) -> str:
    return (
        "\n[tool.mutmut]\n"
        f"source_paths = {json.dumps(sources)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        # the whole tree travels with the mutants: the tests read scripts/, docs/, the
        # README, and the C timing loops (built .so files) live in src/cryptbench
        f"also_copy = {json.dumps([*tree, 'src/cryptbench'])}\n"
        # the shipped schema is compared with one generated from the module's own source
        # text, which mutmut rewrites (trampolines): a difference that is no mutant's; and
        # this script's smoke, run inside the copy, fails for want of git history
        f"pytest_add_cli_args = {json.dumps(['--deselect', SCHEMA_TEXT, '--deselect', MUTATION_SMOKE])}\n"
    )


def run(sources: list[str], tests: list[str], jobs: int) -> Path:
    """mutmut over `sources` with `tests`, in a copy of HEAD; the copy's directory."""
    work = Path(tempfile.mkdtemp(prefix="cryptbench-mutation-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive.stdout, check=True)
    # the C loops are built by pip install, not committed: take them from the work tree
    for built in (REPO / "src" / "cryptbench" / "cipher").glob("*.so"):
        (work / "src" / "cryptbench" / "cipher" / built.name).write_bytes(built.read_bytes())
    _configure(work, sources, tests)
    _mutmut(work, jobs)
    return work


def _configure(work: Path, sources: list[str], tests: list[str]) -> None:
    """The copy's pyproject.toml with mutmut's section for `sources` and `tests` (anew
    where one is there already: mutmut reads only the last)."""
    path = work / "pyproject.toml"
    tree = sorted(p.name for p in work.iterdir() if p.name not in ("src", "mutants"))
    project = path.read_text().partition("\n[tool.mutmut]\n")[0]
    path.write_text(project + _config(sources, tests, tree))


def _mutmut(work: Path, jobs: int, names: list[str] | None = None) -> None:
    """`mutmut run` in `work`, over every mutant or only those `names`."""
    mutmut = Path(sys.executable).parent / "mutmut"
    argv = [str(mutmut), "run", "--max-children", str(jobs), *(names or [])]
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:  # its last lines say why (a test that fails unmutated, say)
        tail = "\n".join(done.stdout.replace("\r", "\n").splitlines()[-15:])
        raise SystemExit(f"mutation.py: mutmut exited {done.returncode} in {work}:\n{tail}")


def recheck(
    work: Path, sources: list[str], first: dict[str, dict[str, str]], jobs: int
) -> dict[str, dict[str, str]]:
    """The survivors of a narrower --tests run again against the whole unit suite.

    Changing mutmut's test selection makes it forget every verdict and map the tests
    anew, so the other mutants keep the verdicts of the first pass."""
    names = [n for mutants in first.values() for n, s in mutants.items() if s == "survived"]
    if not names:
        return first
    _configure(work, sources, ["tests/unit"])
    _mutmut(work, jobs, names)
    second = statuses(work)
    return {
        module: {n: second[module][n] if s == "survived" else s for n, s in mutants.items()}
        for module, mutants in first.items()
    }


def statuses(work: Path) -> dict[str, dict[str, str]]:
    """Each module's mutants and their status, read from mutmut's own records."""
    src = work / "mutants" / "src"
    return {
        str(meta.relative_to(src)).removesuffix(".meta"): {
            name: status_by_exit_code[code]
            for name, code in json.loads(meta.read_text())["exit_code_by_key"].items()
        }
        for meta in sorted(src.rglob("*.py.meta"))
    }


def score(c: Counter[str]) -> float | None:
    judged = c["killed"] + c["survived"]
    return c["killed"] / judged if judged else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", help="comma-separated modules under src/cryptbench (default: DECIDING)")
    ap.add_argument(
        "--tests", default="tests/unit", help="comma-separated tests run on each mutant (default tests/unit)"
    )
    ap.add_argument("--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    ap.add_argument("--survivors", action="store_true", help="list every surviving mutant by name")
    ap.add_argument("--smoke", action="store_true", help="one small module against its own test file")
    ap.add_argument(
        "--recheck", action="store_true", help="run a narrower --tests' survivors again against tests/unit"
    )
    args = ap.parse_args()
    if args.smoke:
        sources, tests = [_source(SMOKE[0])], [SMOKE[1]]
    else:
        modules = args.modules.split(",") if args.modules else list(DECIDING)
        sources, tests = [_source(m.strip()) for m in modules], [t.strip() for t in args.tests.split(",")]
    work = run(sources, tests, args.jobs)
    every = statuses(work)
    if args.recheck:  # the first pass's table first: a recheck cut short loses nothing
        print(f"against {', '.join(tests)} alone:")
        report(every)
        every = recheck(work, sources, every, args.jobs)
        print("its survivors rechecked against tests/unit:")
    report(every)
    if args.survivors:
        print("\n".join(n for mutants in every.values() for n, s in mutants.items() if s == "survived"))
    if args.smoke:
        shutil.rmtree(work)
    else:
        print(f"mutmut's records (mutmut browse there): {work}", file=sys.stderr)
    return 0


def report(every: dict[str, dict[str, str]]) -> None:
    """Each module's mutants by status, and the score over them all."""
    found = {module: Counter(mutants.values()) for module, mutants in every.items()}
    total: Counter[str] = Counter()
    heads = ("mutants", "killed", "survived", "no tests", "other", "score")
    print(f"{'module':34} " + " ".join(f"{h:>8}" for h in heads))
    for module, c in found.items():
        total += c
        other = sum(c.values()) - c["killed"] - c["survived"] - c["no tests"]
        s = score(c)
        print(
            f"{module:34} {sum(c.values()):8} {c['killed']:8} {c['survived']:8} {c['no tests']:8} {other:8} "
            f"{'-' if s is None else f'{s:8.1%}'}"
        )
    s = score(total)
    shown = "-" if s is None else f"{s:.1%}"
    print(f"score over {len(found)} module(s): {shown} of the mutants a test reached killed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
