"""What to run, checked before anything is provisioned: suites and the plan."""
