"""Names for the data that crosses the tool's edges untyped, so a signature says
which edge: `JsonObject` for JSON as json.loads gives it and json.dumps takes it
(fio's output, a stored plan or environment, a `--json` document), `TomlTable`
for a table tomllib read from a suite file, before it is checked, and `DbRow`
for a row sqlite3 returned, by column name. Inside the tool, data has types of
its own (model/result, store/rows, plan.Plan, …); these mark where it does not
yet, or by nature cannot."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
TomlTable = dict[str, Any]
DbRow = dict[str, Any]
