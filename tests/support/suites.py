"""Suite files that several integration tests run."""

# One read and one write: every phase of a run (provisioning, the encryption proof, the
# protection probes, the read workload's laid-out file, trials, teardown) on every
# backend, without the quick suite's other four workloads, which only repeat the kind
# of trial these two make. rclone-crypt, which writes a file only from its start, runs
# the read and not the write (the plan's not_run).
READ_AND_WRITE = """
name = "read-and-write"
description = "A read and a write: every phase of a run, on every backend"
[[workloads]]
name = "seq1m-q8-read"
rw = "read"
bs = "1M"
iodepth = 8
[[workloads]]
name = "rnd4k-q1-write"
rw = "randwrite"
bs = "4K"
iodepth = 1
"""
