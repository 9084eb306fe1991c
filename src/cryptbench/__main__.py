from cryptbench.cli import main

raise SystemExit(main())
