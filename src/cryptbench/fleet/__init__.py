"""Fleet runs: `cryptbench serve` on each host, one coordinator driving them through fio's client/server mode.

`address.py` (where a fio server may listen, fio's address syntax),
`server.py` (starting fio's server, journaled), `manifest.py` (what a host
serves), `hosts.py` (hosts.toml), `client.py` (one `fio --client` invocation
over several hosts, split per host), `spread.py` (each overhead's spread
across hosts).
"""
