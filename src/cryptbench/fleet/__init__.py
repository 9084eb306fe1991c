"""Fleet runs: `cryptbench serve` on each host, one coordinator driving them through
fio's client/server mode (docs/fleet.md).

`address.py` (HOST[:PORT], [IPv6]:PORT, unix:/PATH as fio spells them; what `serve` may
listen on), `hosts.py` (strict hosts.toml), `manifest.py` (what a serve provisioned,
written whole into its run directory, parsed strictly: every data file inside the
host's scratch), `server.py` (starting `fio --server`, journaled as a process tree;
its unix socket made private), `client.py` (the job check: no command-running or
trigger options, no file outside the host's scratch; one `fio --client` invocation
over several hosts, each host's figures by address, a missing host lost with fio's
words), `spread.py` (each target's cost, its change in speed, spread across hosts). The run itself is
`pipeline/fleet_run.py`'s.
"""
