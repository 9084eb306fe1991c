"""The machine a run owns: system calls, resources journaled and released, the
session, keys, interrupts, throttles."""
