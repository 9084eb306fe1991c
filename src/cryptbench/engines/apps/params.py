"""Reading an application workload's parameters from its suite table."""

from __future__ import annotations

from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import TomlTable
from cryptbench.model.units import format_bytes, parse_size


class Params:
    """The parameters of one workload table; each read once, unknown ones refused."""

    def __init__(self, table: TomlTable, where: str) -> None:
        self.table = dict(table)
        self.where = where

    def size(self, key: str, default: int, low: int, high: int) -> int:
        if key not in self.table:
            return default
        value = self.table.pop(key)
        if not isinstance(value, str):
            raise UsageError(f'{self.where}: {key} must be a size in a string, such as "24M"')
        n = parse_size(value, what=f"{self.where}: {key}")
        if not low <= n <= high:
            raise UsageError(f"{self.where}: {key} must be from {format_bytes(low)} to {format_bytes(high)}")
        return n

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        if key not in self.table:
            return default
        value = self.table.pop(key)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise UsageError(f"{self.where}: {key} must be a whole number from {low} to {high}")
        return value

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        if key not in self.table:
            return default
        value = self.table.pop(key)
        if value not in choices:
            raise UsageError(
                f"{self.where}: {key} must be one of {', '.join(choices)}, not {str(value)[:40]!r}"
            )
        return str(value)

    def done(self) -> None:
        """Refuse whatever the workload did not read: a typo is not a default."""
        if self.table:
            raise UsageError(f"{self.where}: unknown key {sorted(self.table)[0]!r} for this app workload")
