"""What each way of encrypting protects, proven on this machine: probes that write
through a target's decrypted view and look at its backing as someone who reads it
at rest would (docs/protection.md)."""
