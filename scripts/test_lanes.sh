#!/usr/bin/env bash
# make test's checks in two lanes side by side (docs/kernel-lab.md, "Two lanes"):
#   1. the host's integration tests with the kernel lab beside them, at normal priority:
#      the longest path, printed as it goes;
#   2. lint and types, then the unit tests and the integration tests marked `beside` (they
#      need nothing of the machine to themselves), under SCHED_IDLE: they take only what lane 1
#      and the lab's guest (nice 15) leave idle, about a quarter of the machine while
#      both run, and both cores once they end. Its output is kept in build/test-lane2.log
#      and printed after lane 1's; its exit status counts as much as lane 1's.
# SCHED_IDLE, not a nice level: a waking lane-1 process preempts an idle-policy one at
# once, so a host test that times something keeps the CPU it had. It did not make lane 1
# measurably faster than nice 19 did: the lanes share two cores either way
# (docs/kernel-lab.md, "Two lanes", has both fresh-clone runs).
#   scripts/test_lanes.sh PHASES TIMES PYTEST
# Each lane's pytest writes its own times file: TIMES, and TIMES with "-unit" before ".json".
set -uo pipefail
phases=$1 times=$2 pytest=$3
log=build/test-lane2.log
mkdir -p build
(
	chrt --idle 0 scripts/timed.sh "$phases" "lint and types" make --no-print-directory lint-steps
	lint=$?
	chrt --idle 0 scripts/timed.sh "$phases" "unit tests" \
		env CRYPTBENCH_TEST_TIMES="${times%.json}-unit.json" "$pytest" tests/unit tests/integration \
		-m "not integration or beside"
	unit=$?
	[ "$lint" -ne 0 ] && exit "$lint"
	exit "$unit"
) >"$log" 2>&1 &
lane2=$!
scripts/timed.sh "$phases" "integration and kernel lab" \
	env CRYPTBENCH_TEST_TIMES="$times" "$pytest" --ignore=tests/unit -m "not beside"
rc1=$?
wait "$lane2"
rc2=$?
printf '\n%s\n' "===== lane 2, beside the above under SCHED_IDLE: lint and types, then the unit tests (build/test-lane2.log) ====="
cat "$log"
[ "$rc1" -ne 0 ] && exit "$rc1"
exit "$rc2"
