"""The stages of a measurement that the commands share (run, serve, fleet, selftest,
cleanup), so that no command imports another.

- `execute.py`: a whole run of a plan (session and scratch lock, recovery of dead
  runs, the cipher figures, data files, trials, teardown on every way out); `run`
  and `selftest` are this.
- `lifecycle.py`: the session's way in and out, above all under signals.
- `provision.py`: every target up (as `trial/provisioned.Provisioned`), proven
  encrypted, O_DIRECT probed, the I/O mode decided; `recover_stale` (used by `run`,
  `serve`, `cleanup`).
- `verify.py`: the marker search, the proof of encryption, the O_DIRECT probe, and
  the protection probes with their positive controls.
- `cipher_speed.py`: the ciphers' own speed, for `cipher` and for a run's own layers.
- `fleet_run.py`, `fleet_hosts.py`, `fleet_coordinator.py`: `fleet run`, its hosts'
  manifests and the Coordinator that runs its rounds.

`planning/`, `trial/` and `stats/` are shared too, but sit lower down. `pipeline/` and
`report/` are siblings that never import each other. A stage writes a run to the store
and returns where (`execute.Executed`); it builds no document and imports nothing of
`analysis/`: the command reads the run back (`analysis/document.read`), as `show` does,
and the renderers print what it read.
"""
