"""The results database: `database.py` (the `Store`, SQLite written trial by trial, one
transaction each, so a crash loses at most the trial in flight), `rows.py` (what its
reads return, typed) and `migrations.py` (its schema, version by version)."""
