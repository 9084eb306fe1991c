"""`python -m cryptbench`: the command line, as the `cryptbench` script runs it."""

from cryptbench.cli import main

raise SystemExit(main())
