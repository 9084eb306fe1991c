"""A user's own dm-crypt volume as run --existing finds it (measure/volume.py) and plans its
reads (planning/existing.py), from machines laid out as the kernel lays out /sys, with
crypt tables dm-crypt printed in the kernel lab. The real volume, read and checksummed,
is tests/lab/test_existing.py's."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from cryptbench.engines.fio_workload import WorkloadSpec
from cryptbench.measure.volume import CryptVolume, check_readable, crypt_volume
from cryptbench.model.errors import UsageError
from cryptbench.model.stack import LayerKind
from cryptbench.planning.existing import DEFAULT_REGION, REFUSED, REGION_ALIGN, existing_plan
from cryptbench.planning.request import RunRequest
from tests.support.fake_machine import Machine, recorded_table

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the volume's device nodes are made with mknod, which is root's"
)
MAPPING = "nvme0n1p3_crypt"


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def crypt_table(device: str = "259:3", sectors: int = 98304, offset: int = 32768) -> str:
    """The lab's LUKS2 table (4096-byte sectors, key in the keyring), on `device`."""
    parts = recorded_table("6.1", "[]").split()
    parts[1], parts[6], parts[7] = str(sectors), device, str(offset)
    return " ".join(parts)


def laptop(machine: Machine, table: str | None = None) -> Path:
    """ext4 on LUKS2 on a partition of an NVMe disk, and /dev holding their nodes."""
    disk = machine.disk("nvme0n1", "259:0", model="Samsung SSD 980")
    part = machine.partition(disk, "nvme0n1p3", "259:3", 2_099_200)
    uuid = f"CRYPT-LUKS2-22031bda641e46078834a7500fb045e5-{MAPPING}"
    machine.mapping("dm-0", "253:0", MAPPING, uuid, table or crypt_table(), part)
    (machine.sys / "block" / "dm-0" / "size").write_text("98304\n")
    for name, number in (("dm-0", (253, 0)), ("nvme0n1p3", (259, 3))):
        node(machine, name, *number)
    return machine.mount("253:0", "root", "ext4", f"/dev/mapper/{MAPPING}")


def node(machine: Machine, name: str, major: int, minor: int) -> Path:
    dev = machine.root / "dev"
    dev.mkdir(exist_ok=True)
    path = dev / name
    os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(major, minor))
    return path


def found(machine: Machine, where: Path, **kw: object) -> CryptVolume:
    return crypt_volume(where, machine.reader(**kw), machine.root / "dev", root=True)


def test_a_path_on_a_luks_root_finds_its_mapping_its_partition_and_where_its_data_starts(
    machine: Machine,
) -> None:
    home = laptop(machine)
    v = found(machine, home)
    assert (v.mapping, v.device) == (MAPPING, "nvme0n1p3")
    assert (v.mapping_node, v.device_node) == (
        machine.root / "dev" / "dm-0",
        machine.root / "dev" / "nvme0n1p3",
    )
    assert v.data_offset == 32768 * 512
    assert (v.size, v.sector, v.device_block) == (98304 * 512, 4096, 512)  # a partition's: its disk's
    assert v.stack.path == f"/dev/mapper/{MAPPING}"
    assert [x.kind for x in v.stack.layers] == [LayerKind.DM_CRYPT, LayerKind.PARTITION, LayerKind.DISK]
    assert v.layer.detail("cipher") == "aes-xts-plain64" and v.layer.detail("key") == "512-bit key"
    stored = v.to_json()
    assert stored["data_offset"] == 32768 * 512 and stored["device"] == "nvme0n1p3"
    assert str(home) not in str(stored)  # the path asked about is not what is stored


def test_what_is_stored_of_a_volume_is_names_sizes_and_offsets(machine: Machine) -> None:
    v = found(machine, laptop(machine))
    stored = v.to_json()
    assert stored == {
        "mapping": MAPPING,
        "mapping_node": str(machine.root / "dev" / "dm-0"),
        "device": "nvme0n1p3",
        "device_node": str(machine.root / "dev" / "nvme0n1p3"),
        "data_offset": 32768 * 512,
        "size": 98304 * 512,
        "sector": 4096,
        "device_block": 512,
        "stack": v.stack.to_json(),
    }


def test_the_devices_logical_block_is_its_disks_for_a_partition_and_its_own_else(machine: Machine) -> None:
    laptop(machine)
    disk = machine.sys / "block" / "nvme0n1"
    (disk / "queue" / "logical_block_size").write_text("4096\n")
    assert found(machine, machine.root / "dev" / "dm-0").device_block == 4096  # the disk's
    (disk / "queue" / "logical_block_size").unlink()
    assert found(machine, machine.root / "dev" / "dm-0").device_block == 512  # none read: a sector


def test_a_table_that_does_not_start_at_sector_0_is_refused(machine: Machine) -> None:
    laptop(machine, crypt_table().replace("0 98304", "8 98304", 1))
    with pytest.raises(UsageError, match=r"crypt table cannot be read: 8 98304 crypt$"):
        found(machine, machine.root / "dev" / "dm-0")


def test_the_mappings_own_node_is_taken_as_it_is(machine: Machine) -> None:
    laptop(machine)
    v = found(machine, machine.root / "dev" / "dm-0")
    assert v.mapping == MAPPING and v.stack.path == str(machine.root / "dev" / "dm-0")


def test_a_partition_read_directly_is_not_a_mapping(machine: Machine) -> None:
    laptop(machine)
    with pytest.raises(UsageError, match=r"nvme0n1p3: not a device-mapper mapping"):
        found(machine, machine.root / "dev" / "nvme0n1p3")


def test_a_path_on_no_encrypted_layer_is_refused_with_its_stack(machine: Machine) -> None:
    disk = machine.disk("sda", "8:0")
    where = machine.mount("8:0", "data", "ext4", "/dev/sda")
    del disk
    with pytest.raises(UsageError) as e:
        found(machine, where)
    assert (
        str(e.value)
        == f"--existing {where}: ext4 on sda: no dm-crypt layer under it, so no encryption to measure"
    )


def test_a_path_encrypted_by_another_layer_names_it(machine: Machine) -> None:
    machine.disk("sda", "8:0")
    where = machine.mount("8:0", "data", "ext4", "/dev/sda")
    policy = (2, 1, 4, 0)  # v2, AES-256-XTS contents, AES-256-CTS names
    with pytest.raises(UsageError, match=r"it is encrypted by fscrypt, not dm-crypt"):
        found(machine, where, policy=lambda _p: policy)


def test_a_mapping_that_is_not_crypt_says_its_targets(machine: Machine) -> None:
    disk = machine.disk("sda", "8:0")
    machine.mapping("dm-1", "253:1", "vg-home", "LVM-abc", "0 2048 linear 8:0 0", disk)
    node(machine, "dm-1", 253, 1)
    where = machine.root / "dev" / "dm-1"
    with pytest.raises(UsageError) as e:
        found(machine, where)
    assert str(e.value) == f"--existing {where}: mapping vg-home is not a crypt mapping (its targets: linear)"


def test_a_table_of_several_lines_is_refused(machine: Machine) -> None:
    two = crypt_table() + "\n" + crypt_table().replace("0 98304", "98304 8", 1)
    laptop(machine, two)
    with pytest.raises(UsageError, match=r"table has 2 lines \(crypt\); only a mapping that is one crypt"):
        found(machine, machine.root / "dev" / "dm-0")


def test_a_table_cut_short_or_off_its_start_is_refused(machine: Machine) -> None:
    laptop(machine, " ".join(crypt_table().split()[:7]))
    with pytest.raises(UsageError, match=r"crypt table cannot be read: 0 98304 crypt"):
        found(machine, machine.root / "dev" / "dm-0")


def test_a_mapping_that_copies_does_not_encrypt(machine: Machine) -> None:
    parts = crypt_table().split()
    parts[3] = "cipher_null-ecb"
    laptop(machine, " ".join(parts))
    with pytest.raises(UsageError, match=r"mapping nvme0n1p3_crypt does not encrypt \(cipher_null-ecb\)"):
        found(machine, machine.root / "dev" / "dm-0")


def test_a_device_field_that_is_no_device_here_is_refused(machine: Machine) -> None:
    laptop(machine, crypt_table(device="7:9"))
    with pytest.raises(UsageError, match=r"the device under nvme0n1p3_crypt \(7:9\) is not in"):
        found(machine, machine.root / "dev" / "dm-0")


def test_a_dev_node_that_is_another_device_is_never_opened(machine: Machine) -> None:
    laptop(machine)
    (machine.root / "dev" / "nvme0n1p3").unlink()
    node(machine, "nvme0n1p3", 8, 0)  # a stale node: another device's number
    with pytest.raises(UsageError, match=r"nvme0n1p3 is not block device 259:3"):
        found(machine, machine.root / "dev" / "dm-0")


def test_missing_unreachable_and_not_root_are_refused_before_anything_is_read(machine: Machine) -> None:
    home = laptop(machine)
    with pytest.raises(UsageError, match=r"^--existing /nowhere: no such file or directory$"):
        found(machine, Path("/nowhere"))
    with pytest.raises(UsageError, match=r"reading a dm-crypt volume needs root"):
        crypt_volume(home, machine.reader(), machine.root / "dev", root=False)


def test_a_volume_that_cannot_be_read_is_said_so(machine: Machine, tmp_path: Path) -> None:
    laptop(machine)
    v = found(machine, machine.root / "dev" / "dm-0")
    # a node of a device no machine has (a major for local, experimental use): its open fails
    gone = replace(v, mapping_node=node(machine, "gone", 241, 77))
    with pytest.raises(UsageError, match=r"^--existing: \S+/dev/gone cannot be read \(No such device"):
        check_readable(gone)
    readable = replace(v, mapping_node=tmp_path / "m", device_node=tmp_path / "d")
    for p in (readable.mapping_node, readable.device_node):
        p.write_bytes(b"x")
    check_readable(readable)


# --- the plan ---


def volume(machine: Machine) -> CryptVolume:
    laptop(machine)
    return found(machine, machine.root / "dev" / "dm-0")


def request(tmp_path: Path, **kw: object) -> RunRequest:
    return RunRequest(target=str(tmp_path), db=tmp_path / "r.sqlite", **kw)  # type: ignore[arg-type]


def test_the_plan_reads_the_quick_suites_reads_and_says_why_its_writes_are_not_run(
    machine: Machine, tmp_path: Path
) -> None:
    v = volume(machine)
    plan = existing_plan(request(tmp_path, existing="x", seed=7), v)
    assert [w.name for w in plan.suite.workloads] == ["seq1m-q8-read", "rnd4k-q32-read", "rnd4k-q1-read"]
    assert plan.left_out == ("seq1m-q8-write", "rnd4k-q32-write", "rnd4k-q1-write")
    assert plan.notes[0].startswith("seq1m-q8-write, rnd4k-q32-write, rnd4k-q1-write not run: writes to your")
    # the volume holds 48 MiB: the region is all of it, and starts at its start
    assert (plan.region_bytes, plan.region_start) == (48 << 20, 0)
    assert plan.raw_offset == v.data_offset
    assert plan.targets == ("raw-nvme0n1p3", MAPPING)
    assert [(q.workload, q.target, q.baseline) for q in plan.questions] == [
        (w, MAPPING, "raw-nvme0n1p3") for w in ("seq1m-q8-read", "rnd4k-q32-read", "rnd4k-q1-read")
    ]
    assert plan.ranking is not None and plan.ranking.plain_of == {MAPPING: "raw-nvme0n1p3"}
    stored = plan.to_json()
    assert stored["existing"]["raw_offset"] == v.data_offset and stored["io_mode"] == "direct"
    assert stored["targets"] == ["raw-nvme0n1p3", MAPPING]
    assert stored["backends"] == ["existing-raw", "existing-dm-crypt"]


def test_a_region_smaller_than_the_volume_starts_at_a_seeded_aligned_place(
    machine: Machine, tmp_path: Path
) -> None:
    v = replace(volume(machine), size=10 << 30)
    starts = set()
    for seed in range(20):
        plan = existing_plan(request(tmp_path, existing="x", seed=seed), v)
        assert plan.region_bytes == DEFAULT_REGION
        assert plan.region_start % REGION_ALIGN == 0
        assert 0 <= plan.region_start <= v.size - plan.region_bytes
        assert plan.raw_offset == v.data_offset + plan.region_start
        again = existing_plan(request(tmp_path, existing="x", seed=seed), v)
        assert again.region_start == plan.region_start  # --seed reproduces the place
        starts.add(plan.region_start)
    assert len(starts) > 10


def test_size_is_the_region_within_the_volume(machine: Machine, tmp_path: Path) -> None:
    v = volume(machine)
    assert existing_plan(request(tmp_path, existing="x", size="16M"), v).region_bytes == 16 << 20
    with pytest.raises(UsageError, match=r"^--size 1.0 GiB is more than nvme0n1p3_crypt holds \(48.0 MiB\)$"):
        existing_plan(request(tmp_path, existing="x", size="1G"), v)
    with pytest.raises(UsageError, match=r"reads at least 1 MiB"):
        existing_plan(request(tmp_path, existing="x", size="4K"), v)


@pytest.mark.parametrize(("flag", "why"), REFUSED)
def test_each_flag_a_read_only_run_cannot_honour_is_refused(
    machine: Machine, tmp_path: Path, flag: str, why: str
) -> None:
    v = volume(machine)
    value: object = True if flag in ("as_published", "ram") else ["true"] if flag == "commands" else "x"
    with pytest.raises(UsageError) as e:
        existing_plan(request(tmp_path, existing="x", **{flag: value}), v)
    assert str(e.value) == why


def test_buffered_reads_and_blocks_smaller_than_a_sector_are_refused(
    machine: Machine, tmp_path: Path
) -> None:
    v = volume(machine)
    with pytest.raises(UsageError, match=r"--io-mode: --existing reads with O_DIRECT only"):
        existing_plan(request(tmp_path, existing="x", io_mode="buffered"), v)
    suite = tmp_path / "small.toml"
    suite.write_text(
        'name = "small"\ndescription = "d"\n[[workloads]]\nname = "r"\nrw = "read"\nbs = "512"\niodepth = 1\n'
    )
    with pytest.raises(
        UsageError, match=r"r reads 512 B blocks, not a whole number of the volume's 4096-byte"
    ):
        existing_plan(request(tmp_path, existing="x", suite=str(suite)), v)


def test_a_suite_of_writes_or_tasks_has_nothing_to_run(machine: Machine, tmp_path: Path) -> None:
    v = volume(machine)
    suite = tmp_path / "w.toml"
    suite.write_text(
        'name = "w"\ndescription = "d"\n[[workloads]]\nname = "w"\nrw = "write"\nbs = "1M"\niodepth = 1\n'
    )
    with pytest.raises(UsageError, match=r"^--existing: suite w has no fio read to run on your data$"):
        existing_plan(request(tmp_path, existing="x", suite=str(suite)), v)
    with pytest.raises(UsageError, match=r"is a task, not a fio read"):
        existing_plan(request(tmp_path, existing="x", suite="example-sqlite"), v)


def test_the_backing_views_of_a_study_are_its_reads_already(machine: Machine, tmp_path: Path) -> None:
    plan = existing_plan(request(tmp_path, existing="x", suite="study-002"), volume(machine))
    assert all(isinstance(w, WorkloadSpec) and w.view == "decrypted" for w in plan.suite.workloads)
    assert [w.name for w in plan.suite.workloads] == ["seq4k-decrypted", "seq64k-decrypted"]
    assert plan.left_out == ()
