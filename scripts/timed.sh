#!/usr/bin/env bash
# One phase of make test, timed: runs the command and appends "WHAT<TAB>SECONDS<TAB>EXIT"
# to FILE, for the table tests/support/time_budget.py prints at the end.
#   scripts/timed.sh FILE "what the phase is" COMMAND [ARG...]
set -uo pipefail
file=$1 what=$2
shift 2
start=$EPOCHREALTIME
"$@"
rc=$?
mkdir -p "$(dirname "$file")"
printf '%s\t%s\t%d\n' "$what" "$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" "$rc" >>"$file"
exit $rc
