"""The flag trial's plan (planning/flag_trial.py): which sets of dm-crypt's performance
flags are tried beside a volume's own, what a shadow's table holds, and the lines that
would set the winner: refresh names every flag kept (it replaces the whole set), and
crypttab keeps the user's own options."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench.planning.flag_trial import (
    apply_lines,
    crypttab_entry,
    crypttab_line,
    flag_sets,
    own_flags,
    refresh_command,
    shadow_options,
)

NO_HIGH = {
    "high_priority": "needs Linux 6.10: dm-crypt 1.24 has no high_priority flag (dm-crypt 1.26 added it)"
}


def test_each_read_flag_is_toggled_alone_against_the_volumes_own_set() -> None:
    sets, notes = flag_sets(("allow_discards", "sector_size:4096", "same_cpu_crypt"), missing={})
    assert [(s.name, s.said, s.flags) for s in sets] == [
        ("flags+no_read_workqueue", "no_read_workqueue added", ("no_read_workqueue", "same_cpu_crypt")),
        ("flags-same_cpu_crypt", "same_cpu_crypt removed", ()),
        ("flags+high_priority", "high_priority added", ("same_cpu_crypt", "high_priority")),
    ]
    assert notes == [
        "no_write_workqueue and submit_from_crypt_cpus not tried: they change writes only, which a "
        "read-only trial of your volume cannot see"
    ]


def test_a_flag_the_kernel_lacks_is_not_tried_and_said_why_and_write_flags_are_kept() -> None:
    sets, notes = flag_sets(("no_write_workqueue",), missing=NO_HIGH)
    assert [s.name for s in sets] == ["flags+no_read_workqueue", "flags+same_cpu_crypt"]
    assert sets[0].flags == ("no_read_workqueue", "no_write_workqueue")
    assert notes[0] == f"high_priority not tried: {NO_HIGH['high_priority']}"
    assert notes[1].endswith("cannot see (no_write_workqueue kept as your volume has it)")


def test_a_flag_the_volume_has_is_tried_removed_even_where_the_kernel_is_said_to_lack_it() -> None:
    sets, _notes = flag_sets(("high_priority",), missing=NO_HIGH)
    assert [s.name for s in sets][-1] == "flags-high_priority"


def test_a_shadows_options_keep_all_but_the_performance_flags() -> None:
    options = ("allow_discards", "same_cpu_crypt", "sector_size:4096", "iv_large_sectors")
    assert own_flags(options) == ("same_cpu_crypt",)
    assert shadow_options(options, ("no_read_workqueue",)) == (
        "allow_discards",
        "sector_size:4096",
        "iv_large_sectors",
        "no_read_workqueue",
    )


def test_refresh_names_every_flag_kept_and_discards_which_it_would_drop() -> None:
    flags = ("no_read_workqueue", "no_write_workqueue")
    assert refresh_command("home", flags, ("allow_discards",), False) == (
        "cryptsetup refresh --allow-discards --perf-no_read_workqueue --perf-no_write_workqueue home"
    )
    assert refresh_command("home", (), (), True) == "cryptsetup refresh --persistent home"


def test_crypttab_keeps_the_users_own_options_and_replaces_only_performance_ones(tmp_path: Path) -> None:
    tab = tmp_path / "crypttab"
    tab.write_text(
        "# <target> <source> <key> <options>\n"
        "swap /dev/sdb2 /dev/urandom swap\n"
        "home UUID=4f9c none luks,discard,same-cpu-crypt\n"
        "short UUID=77\n"
    )
    entry = crypttab_entry("home", tab)
    assert entry == "home UUID=4f9c none luks,discard,same-cpu-crypt"
    assert crypttab_line("home", ("no_read_workqueue",), entry) == (
        "home UUID=4f9c none luks,discard,no-read-workqueue"
    )
    assert crypttab_line("short", ("same_cpu_crypt",), crypttab_entry("short", tab)) == (
        "short UUID=77 none luks,same-cpu-crypt"
    )
    assert crypttab_entry("other", tab) is None and crypttab_entry("home", tmp_path / "none") is None
    assert crypttab_line("other", ("no_read_workqueue",), None) == (
        "no-read-workqueue among other's options (/etc/crypttab has no line for it)"
    )


@pytest.mark.parametrize("luks2", [True, False])
def test_the_lines_to_apply_are_now_for_good_on_luks2_and_crypttab(luks2: bool) -> None:
    lines = apply_lines("home", ("high_priority",), (), luks2, "home UUID=1 none luks")
    assert lines[0] == "now: cryptsetup refresh --perf-high_priority home"
    assert (
        any(
            line.startswith("for good (kept in the LUKS2 header): cryptsetup refresh --persistent ")
            for line in lines
        )
        is luks2
    )
    assert "/etc/crypttab has no option for high_priority: set it for good with --persistent" in lines
    assert lines[-1] == "in /etc/crypttab: home UUID=1 none luks"
