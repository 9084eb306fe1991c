"""What is measured around a trial: caches, CPU, the device's counters, and the layers under a path."""
