"""Suite files that several integration tests run."""

# One read and one write: every phase of a run (provisioning, the encryption proof, the
# protection probes, the read workload's laid-out file, trials, teardown) on every
# backend, without the quick suite's other four workloads, which only repeat the kind
# of trial these two make. The write is sequential, so that rclone-crypt, which writes a
# file only from its start, is among every backend.
READ_AND_WRITE = """
name = "read-and-write"
description = "A read and a write: every phase of a run, on every backend"
[[workloads]]
name = "seq1m-q8-read"
rw = "read"
bs = "1M"
iodepth = 8
[[workloads]]
name = "seq1m-q1-write"
rw = "write"
bs = "1M"
iodepth = 1
"""
