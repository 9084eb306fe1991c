#!/usr/bin/env bash
# One set-up step on one line: its output (apt's, pip's) goes to a log file, and
# only a failure shows it, by its last lines and the log's path.
#   scripts/quietly.sh LOG "what the step does" COMMAND [ARG...]
set -uo pipefail
log=$1 what=$2
shift 2
mkdir -p "$(dirname "$log")"
echo "$what (log: $log)"
{ echo "== $what: $* ($(date -u +%FT%TZ))"; } >>"$log"
# fd 3 stays the terminal's stderr: what a step must tell the user (install-system-deps' notice).
"$@" 3>&2 >>"$log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
    echo "$what failed (exit $rc); the last lines of $log:" >&2
    tail -n 25 "$log" >&2
    echo "the whole log: $log" >&2
fi
exit $rc
