"""What each way of encrypting protects, proven on this machine: probes that write
through a target's decrypted view and look at its backing as someone who reads it
at rest would (docs/protection.md), run at provisioning.

- `sight.py`: what a reader of the backing sees (a directory's paths and sizes, an ext4
  image's files through `debugfs -c`, nothing for a LUKS container or qcow2 file).
- `probes.py`: names, sizes and tree (write through the view, look at the difference);
  `until_changed`, the one wait for a backing to show a write.
- `blocks.py`: a checksum per 4 KiB block of every backing file, and the runs that changed.
- `tamper.py`: rewrite a file, flip a byte in what changed, read back, put it back.
- `space.py`: a small-file tree and a large file, as `du` or the inner filesystem counts
  them; one byte's change in blocks.
- `findings.py`: `Property`, `Verdict`, `PropertyFinding` (with the backend's declaration) and
  `Protection` (with its space).

Who reads them: `pipeline/verify.probe_protection` runs them with the positive
controls; `report/protection_rows.py` words them; `analysis/ranking.unmet_need`
applies `--needs` and `check --require`; `analysis/warning_rules` raises
`protection-disagrees` and `protection-unproven`. A backend declares its promises in
`declared()` and a daemon's write-behind time in `Target.write_behind`.
"""
