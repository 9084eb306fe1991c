"""One module per command, each owning its command line and its output.

Each has `HELP`, `add_arguments(parser)`, `main(args, out, err)` (calls `run`, prints
the answer, returns the exit status; `--json` goes through `report/json_output`) and
a `run` that tests call directly, taking one frozen request of what the user asked
(`RunRequest`, `CheckRequest`, `CipherRequest`, …; `planning/request.request_from_args`
builds it from the flags, so no command copies them by hand), and keyword arguments
only for what a test or another process hands in (progress, a registry); a command of
one or two choices (`show`, `suites`, `cleanup`; `backends` has none) takes them as
keyword arguments instead. Flags several commands share (`--db`, `--json`, `--details`, the stopping
options) are declared once in `common_args.py`, asv's pattern. No command imports
another: what two share lives in `pipeline/` or `analysis/`. Matplotlib is imported
only inside the commands that draw (`report`, `compare --html`), so the command line
starts without it.

The commands: `run`; `backends`; `show`; `report` (exports of a stored run);
`compare` (run B against run A, from one database or two; `--html`); `check` (a CI
gate: exit 1 when an encrypted target loses more than `--max-overhead` of its
baseline's speed on any workload, or has no figure for one); `history` (runs filtered
by backend, workload and host; a target's median run by run, drawn as a sparkline);
`cleanup`; `selftest` (a run of the known-answer targets, then its checks); `serve`
(one host of a fleet: `run`'s provisioning, a manifest, fio's server, watched until a
signal or a death); `fleet` (`fleet run`); `cipher` (the cipher ceilings); `stack` (the
layers under a path, and which encrypt: measure/stack.py); `suites`.
"""
