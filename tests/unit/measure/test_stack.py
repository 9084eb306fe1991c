"""The stack under a path (measure/stack.py, model/stack.py), read from trees laid out as
the kernel lays out /sys and /proc/self/mountinfo, and from crypt tables dm-crypt printed
in the kernel lab (tests/fixtures/dmsetup). What the real kernel shows is tested in
tests/integration/test_stack_real.py and, for dm-crypt, tests/lab/test_existing.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cryptbench.machine.system import MountInfo
from cryptbench.measure.device import bytes_written
from cryptbench.measure.stack import _crypt_layer, _flag_value, _fscrypt_layer
from cryptbench.model.errors import ProvisionError, UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack
from tests.support.fake_machine import Machine, recorded_table


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def laptop(machine: Machine, table: str) -> Path:
    """A laptop as Debian's installer makes it with encryption: ext4 on LUKS2 on a partition."""
    disk = machine.disk("nvme0n1", "259:0", model="Samsung SSD 980")
    part = machine.partition(disk, "nvme0n1p3", "259:3", 2_099_200)
    uuid = "CRYPT-LUKS2-22031bda641e46078834a7500fb045e5-nvme0n1p3_crypt"
    machine.mapping("dm-0", "253:0", "nvme0n1p3_crypt", uuid, table, part)
    return machine.mount("253:0", "root", "ext4", "/dev/mapper/nvme0n1p3_crypt")


def test_a_luks_root_names_the_cipher_the_partition_and_the_disk(machine: Machine) -> None:
    root = laptop(machine, recorded_table("6.1", "[]"))
    stack = machine.reader().stack(root)
    assert stack.path == str(root)
    assert [(x.kind, x.name, x.depth) for x in stack.layers] == [
        (LayerKind.FILESYSTEM, "ext4", 0),
        (LayerKind.DM_CRYPT, "dm-0 (nvme0n1p3_crypt)", 1),
        (LayerKind.PARTITION, "nvme0n1p3", 2),
        (LayerKind.DISK, "nvme0n1", 3),
    ]
    crypt = stack.layers[1]
    assert crypt.encrypted is True
    assert dict(crypt.details) == {
        "format": "LUKS2",
        "cipher": "aes-xts-plain64",
        "key": "512-bit key",
        "key held": "in the kernel keyring",
        "data starts at": f"byte {32768 * 512:,} of its device",
        "sector size": "4096 bytes",
        "flags": "none",
    }
    assert dict(stack.layers[2].details)["starts at"] == f"byte {2_099_200 * 512:,}"
    assert dict(stack.layers[3].details)["model"] == "ATA Samsung SSD 980"
    assert stack.disks == ("nvme0n1",)
    assert stack.line() == "ext4 on dm-crypt (aes-xts-plain64, 512-bit key) on nvme0n1p3 on nvme0n1"
    assert stack.encrypted_sentence() == (
        "your scratch space is on dm-crypt (aes-xts-plain64, 512-bit key): plain here is "
        "encrypted; each figure is the cost of adding a layer to it"
    )
    assert stack.notes == ()


def test_the_device_counters_are_the_disks_not_the_mapping(machine: Machine) -> None:
    """A mapping's own counters count plaintext: the scratch device is the disk under it."""
    root = laptop(machine, recorded_table("6.1", "[]"))
    (machine.sys / "block" / "dm-0" / "stat").write_text("0 0 0 0 0 0 99 0 0 0 0\n")
    stack = machine.reader().stack(root)
    assert stack.disks == ("nvme0n1",)
    assert bytes_written("nvme0n1", machine.sys) == 2048 * 512


def _layer(where: Path, table: str) -> Layer:
    """The crypt layer of a laptop's stack (above) whose mapping holds `table`."""
    m = Machine(where)
    return m.reader().stack(laptop(m, table)).layers[1]


def test_the_table_s_flags_and_a_key_in_the_table(tmp_path: Path) -> None:
    both = _layer(
        tmp_path / "a", recorded_table("6.1", "[--perf-no_read_workqueue --perf-no_write_workqueue]")
    )
    assert both.detail("flags") == "no_read_workqueue, no_write_workqueue"
    # 6.12's high_priority, set by a reload without the keyring: dmsetup prints zeros for the key
    reloaded = _layer(tmp_path / "b", recorded_table("6.12", "[--perf-high_priority]"))
    assert reloaded.detail("flags") == "high_priority"
    assert reloaded.detail("key") == "512-bit key"
    assert reloaded.detail("key held") == "in the table"


@pytest.mark.parametrize(
    ("key", "bits"),
    [
        (":32:logon:cryptsetup:x-d0", 256),
        ("0" * 64, 256),
        ("-", None),  # a mapping whose key dmsetup does not show at all
    ],
)
def test_a_key_field_gives_its_size_and_nothing_else(tmp_path: Path, key: str, bits: int | None) -> None:
    table = f"0 2048 crypt aes-cbc-essiv:sha256 {key} 0 259:3 4096"
    crypt = _layer(tmp_path, table)
    assert crypt.detail("key") == (f"{bits}-bit key" if bits else None)
    assert crypt.detail("sector size") == "512 bytes"  # no sector_size option: dm-crypt's 512
    assert crypt.detail("cipher") == "aes-cbc-essiv:sha256"
    if key != "-":  # neither the keyring's reference nor dmsetup's zeros are kept
        assert key not in json.dumps(crypt.to_json())


def test_integrity_and_a_null_cipher(tmp_path: Path) -> None:
    aead = _layer(tmp_path / "a", "0 8 crypt capi:gcm(aes)-random - 0 253:1 0 1 integrity:28:aead")
    assert aead.detail("integrity") == "aead, 28-byte tags"
    null = _layer(tmp_path / "n", "0 8 crypt cipher_null-ecb - 0 259:3 4096")
    assert null.encrypted is False  # a crypt mapping that copies hides nothing


def test_without_root_a_crypt_mapping_is_known_by_its_uuid(machine: Machine) -> None:
    root = laptop(machine, recorded_table("6.1", "[]"))

    def never(_name: str) -> str:
        raise AssertionError("dmsetup table needs root: not asked without it")

    stack = machine.reader(root=lambda: False, table=never).stack(root)
    crypt = stack.layers[1]
    assert (crypt.kind, crypt.encrypted, crypt.details) == (LayerKind.DM_CRYPT, True, (("format", "LUKS2"),))
    assert stack.notes == (
        "nvme0n1p3_crypt: its table needs root (dmsetup table); its cipher and flags are not shown",
    )


def test_a_failed_dmsetup_is_a_note(machine: Machine) -> None:
    root = laptop(machine, "")

    def fails(_name: str) -> str:
        raise ProvisionError("dmsetup is not installed")

    stack = machine.reader(table=fails).stack(root)
    assert stack.layers[1].encrypted is True and stack.notes == ("nvme0n1p3_crypt: dmsetup is not installed",)


def test_lvm_on_raid_lists_both_disks_and_counts_them_together(machine: Machine) -> None:
    sda, sdb = machine.disk("sda", "8:0", rotational="1"), machine.disk("sdb", "8:16", rotational="1")
    parts = machine.partition(sda, "sda1", "8:1", 2048), machine.partition(sdb, "sdb1", "8:17", 2048)
    md = machine.md("md0", "9:0", "raid1", *parts)
    machine.mapping("dm-1", "253:1", "vg-home", "LVM-abcdef", "0 4096 linear 9:0 2048", md)
    home = machine.mount("253:1", "home", "xfs", "/dev/mapper/vg-home")
    stack = machine.reader().stack(home)
    assert [(x.name, x.depth) for x in stack.layers] == [
        ("xfs", 0),
        ("dm-1 (vg-home)", 1),
        ("md0", 2),
        ("sda1", 3),
        ("sda", 4),
        ("sdb1", 3),
        ("sdb", 4),
    ]
    assert (
        stack.layers[1].detail("is") == "LVM logical volume" and stack.layers[1].detail("targets") == "linear"
    )
    assert stack.layers[2].detail("level") == "raid1"
    assert stack.disks == ("sda", "sdb")
    assert stack.line() == "xfs on device-mapper dm-1 (vg-home) on md0 on sda1 on sda (and 1 more branch)"
    assert stack.encrypted_sentence() is None
    assert bytes_written("sda+sdb", machine.sys) == 2 * 2048 * 512
    assert bytes_written("sda+nosuch", machine.sys) is None  # a sum with a part missing is no figure


def test_a_loop_device_goes_on_into_the_file_s_own_stack(machine: Machine) -> None:
    machine.disk("vdb", "254:16")
    data = machine.mount("254:16", "data", "ext4", "/dev/vdb")
    image = data / "disk.img"
    image.write_bytes(b"")
    machine.loop("loop3", "7:3", image)
    inner = machine.mount("7:3", "data/inner", "ext4", "/dev/loop3")
    stack = machine.reader().stack(inner)
    assert [(x.kind, x.name, x.depth) for x in stack.layers] == [
        (LayerKind.FILESYSTEM, "ext4", 0),
        (LayerKind.LOOP, "loop3", 1),
        (LayerKind.FILESYSTEM, "ext4", 2),
        (LayerKind.DISK, "vdb", 3),
    ]
    assert stack.layers[1].detail("file") == str(image)
    assert stack.line() == "ext4 on loop3 on ext4 on vdb"
    image.unlink()
    gone = machine.reader().stack(inner)
    assert len(gone.layers) == 2 and f"its file {image} cannot be found" in gone.notes[0]


def test_an_fscrypt_policy_sits_above_its_filesystem(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    secret = fs / "secret"
    secret.mkdir()

    def policy(path: Path) -> tuple[int, int, int, int] | None:
        return (2, 1, 4, 0x02 | 0x04) if path == secret else None

    stack = machine.reader(policy=policy).stack(secret)
    assert [x.kind for x in stack.layers] == [LayerKind.FSCRYPT, LayerKind.FILESYSTEM, LayerKind.DISK]
    assert dict(stack.layers[0].details) == {
        "policy": "v2",
        "contents": "AES-256-XTS",
        "filenames": "AES-256-CTS-CBC",
        "filename padding": "16 bytes",
        "flags": "DIRECT_KEY",
    }
    assert stack.line() == "fscrypt (AES-256-XTS) on ext4 on vda"
    assert machine.reader(policy=policy).stack(fs).encrypting == ()


def test_fuse_overlays_lead_to_their_cipher_directory(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    (fs / "cipher").mkdir()
    # gocryptfs names its cipher directory as its mount's source
    plain = machine.mount("0:40", "plain", "fuse.gocryptfs", str(fs / "cipher"), "rw,user_id=0")
    stack = machine.reader().stack(plain)
    assert [(x.kind, x.name, x.encrypted) for x in stack.layers[:2]] == [
        (LayerKind.FUSE, "gocryptfs", True),
        (LayerKind.FILESYSTEM, "ext4", False),
    ]
    assert stack.layers[0].detail("cipher directory") == str(fs / "cipher")
    assert stack.disks == ("vda",)
    # securefs does not: its daemon's arguments do, the directory before the mountpoint
    (fs / "sec").mkdir()
    other = machine.mount("0:41", "other", "fuse.securefs", "securefs")
    argv = [["securefs", "mount", "--pass", "not-a-directory", str(fs / "sec"), str(other)]]
    found = machine.reader(daemons=lambda m: argv if m == other else []).stack(other)
    assert found.layers[0].detail("cipher directory") == str(fs / "sec")
    assert found.disks == ("vda",)


def test_a_fuse_overlay_whose_backing_cannot_be_found(machine: Machine) -> None:
    point = machine.mount("0:42", "remote", "fuse.sshfs", "me@host:/srv")
    stack = machine.reader().stack(point)
    assert [(x.name, x.encrypted) for x in stack.layers] == [("sshfs", False)]
    assert "its backing directory was not found" in stack.notes[0]
    # a daemon that names a directory inside its own mount is not its backing
    (point / "inside").mkdir()
    argv = [["encfs", str(point / "inside"), str(point)]]
    looped = machine.reader(daemons=lambda _m: argv).stack(point)
    assert len(looped.layers) == 1 and "not found" in looped.notes[0]


def test_rclone_encrypts_where_its_remote_is_a_crypt_one(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    (fs / "cipher").mkdir()
    config = fs / "rclone.conf"
    config.write_text(
        f"[secret]\ntype = crypt\nremote = {fs / 'cipher'}\npassword = obscured-not-read\n"
        "[cloud]\ntype = s3\nprovider = AWS\n"
    )
    point = machine.mount("0:43", "mnt", "fuse.rclone", "secret:")
    other = machine.mount("0:44", "s3", "fuse.rclone", "cloud:bucket")
    argv = {point: ["rclone", "mount", "--config", str(config), "secret:", str(point)]}
    argv[other] = ["rclone", "mount", f"--config={config}", "cloud:bucket", str(other)]
    reader = machine.reader(daemons=lambda m: [argv[m]] if m in argv else [])
    crypt = reader.stack(point)
    assert [(x.name, x.encrypted) for x in crypt.layers] == [
        ("rclone", True),
        ("ext4", False),
        ("vda", False),
    ]
    assert crypt.layers[0].detail("remote") == "secret (type crypt)"
    assert crypt.layers[0].detail("cipher directory") == str(fs / "cipher")
    assert "obscured-not-read" not in json.dumps(crypt.to_json())
    s3 = reader.stack(other)
    assert (s3.layers[0].encrypted, s3.layers[0].detail("remote")) == (False, "cloud (type s3)")
    # no config file named, or one that cannot be read: whether it encrypts is not known
    unknown = machine.reader().stack(point)
    assert unknown.layers[0].encrypted is None
    assert unknown.undecided() == unknown.layers[:1] and unknown.encrypting == ()
    assert unknown.encrypted_sentence() is None
    config.write_text("# Encrypted rclone configuration File\n\nRCLONE_ENCRYPT_V0:\nAbCd\n")
    assert reader.stack(point).layers[0].encrypted is None


def test_ecryptfs_and_overlayfs_go_on_below_their_directory(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    (fs / "lower").mkdir()
    (fs / "upper").mkdir()
    options = "rw,ecryptfs_sig=0123,ecryptfs_cipher=aes,ecryptfs_key_bytes=16"
    home = machine.mount("0:50", "home", "ecryptfs", str(fs / "lower"), options)
    stack = machine.reader().stack(home)
    assert (stack.layers[0].name, stack.layers[0].encrypted) == ("ecryptfs", True)
    assert stack.layers[0].detail("key") == "128-bit" and stack.layers[0].detail("cipher") == "aes"
    assert [x.name for x in stack.layers] == ["ecryptfs", "ext4", "vda"]
    merged = machine.mount("0:51", "merged", "overlay", "overlay", f"rw,lowerdir=/x,upperdir={fs / 'upper'}")
    assert [x.name for x in machine.reader().stack(merged).layers] == ["overlay", "ext4", "vda"]


def test_memory_and_no_mount(machine: Machine) -> None:
    shm = machine.mount("0:25", "shm", "tmpfs", "tmpfs")
    stack = machine.reader().stack(shm)
    assert [x.name for x in stack.layers] == ["tmpfs"] and stack.notes == ()
    assert stack.layers[0].detail("device") == "none: its files are in memory"
    assert stack.disks == ()
    outside = machine.root / "nowhere"
    outside.mkdir()
    assert machine.reader().stack(outside).notes == (f"no mount holds {outside}",)
    with pytest.raises(UsageError, match="no such file or directory"):
        machine.reader().stack(machine.root / "missing")


def test_zfs_datasets_say_their_encryption_and_their_pool_s_devices(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    vdev = fs / "pool.img"
    vdev.write_bytes(b"")
    data = machine.mount("0:60", "tank", "zfs", "tank/secret")
    props = {"encryption": "aes-256-gcm", "keystatus": "available", "keyformat": "raw", "encryptionroot": "-"}

    def vdevs(pool: str) -> list[str]:
        return [str(vdev)] if pool == "tank" else []

    stack = machine.reader(zfs=lambda _d: props, vdevs=vdevs).stack(data)
    assert [(x.kind, x.name, x.encrypted) for x in stack.layers] == [
        (LayerKind.ZFS, "tank/secret", True),
        (LayerKind.FILESYSTEM, "ext4", False),
        (LayerKind.DISK, "vda", False),
    ]
    assert stack.layers[0].detail("encryptionroot") is None  # "-": none to say
    assert stack.line() == "ZFS dataset tank/secret (encryption aes-256-gcm) on ext4 on vda"
    off = machine.reader(zfs=lambda _d: {"encryption": "off"}, vdevs=lambda _p: []).stack(data)
    assert off.layers[0].encrypted is False

    def missing(_name: str) -> dict[str, str]:
        raise ProvisionError("zfs is not installed")

    unknown = machine.reader(zfs=missing, vdevs=lambda _p: []).stack(data)
    assert unknown.layers[0].encrypted is None and unknown.notes == (
        "ZFS dataset tank/secret: zfs is not installed",
    )


def test_a_stack_survives_its_json() -> None:
    layers = (
        Layer(LayerKind.FUSE, "gocryptfs", True, 0, (("cipher directory", "/c"),)),
        Layer(LayerKind.FILESYSTEM, "ext4", False, 1),
        Layer(LayerKind.DISK, "vda", False, 2, (("rotational", "no"),)),
    )
    stack = Stack("/p", layers, ("a note",))
    assert Stack.from_json(stack.to_json()) == stack
    assert Stack("/p", ()).line() == "no layer could be read"
    assert stack.encrypted_sentence("path") == (
        "your path is on gocryptfs: plain here is encrypted; each figure is the cost of adding a layer to it"
    )


def test_a_disk_says_what_its_queue_and_driver_say(machine: Machine) -> None:
    disk = machine.disk("vda", "254:0", rotational="1")
    queue = disk / "queue"
    for name, value in {
        "physical_block_size": "4096",
        "nr_requests": "256",
        "read_ahead_kb": "128",
        "max_sectors_kb": "1280",
        "write_cache": "write back",
    }.items():
        (queue / name).write_text(f"{value}\n")
    (queue / "crypto" / "modes").mkdir(parents=True)
    for mode in ("AES-256-XTS", "ADIANTUM"):
        (queue / "crypto" / "modes" / mode).write_text("0x1000\n")
    (disk / "device").mkdir()
    (disk / "device" / "vendor").write_text("0x1af4\n")  # virtio's: a PCI number, no model
    (machine.root / "virtio_blk").mkdir()
    (disk / "device" / "driver").symlink_to(machine.root / "virtio_blk")
    point = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    (layer,) = [x for x in machine.reader().stack(point).layers if x.kind == LayerKind.DISK]
    assert layer.details == (
        ("driver", "virtio_blk"),
        ("rotational", "yes"),
        ("size", "1.0 TiB"),
        ("scheduler", "none"),
        ("logical block", "512 bytes"),
        ("physical block", "4096 bytes"),
        ("queue depth", "256"),
        ("read-ahead", "128 KiB"),
        ("largest request", "1280 KiB"),
        ("write cache", "write back"),
        ("inline encryption", "ADIANTUM, AES-256-XTS"),
    )
    assert layer.encrypted is False  # inline encryption is a capability, not a layer that encrypts


def test_each_layer_s_details_in_full(machine: Machine) -> None:
    """What a reader is shown of a partition, a loop device, a filesystem and a mount of
    part of one, to the word."""
    disk = machine.disk("sda", "8:0", model="WDC WD40", rotational="1")
    machine.partition(disk, "sda2", "8:2", 4096)
    data = machine.mount("8:2", "data", "btrfs", "/dev/sda2", root="/@data")
    image = data / "disk.img"
    image.write_bytes(b"")
    loop = machine.loop("loop5", "7:5", image)
    (loop / "loop" / "offset").write_text("1048576\n")
    (loop / "loop" / "dio").write_text("1\n")
    inner = machine.mount("7:5", "data/inner", "xfs", "/dev/loop5")
    xfs, lo, btrfs, part, sda = machine.reader().stack(inner).layers
    assert xfs.details == (("mountpoint", str(inner)), ("source", "/dev/loop5"), ("options", "rw,relatime"))
    assert lo.details == (
        ("file", str(image)),
        ("offset", "byte 1,048,576"),
        ("direct I/O", "yes"),
        ("size", "512.0 MiB"),
    )
    assert btrfs.details[-1] == ("directory mounted", "/@data")
    assert part.details == (("number", "2"), ("starts at", "byte 2,097,152"), ("size", "512.0 MiB"))
    assert (sda.details[0], sda.details[1]) == (("model", "ATA WDC WD40"), ("rotational", "yes"))
    assert [x.depth for x in (xfs, lo, btrfs, part, sda)] == [0, 1, 2, 3, 4]


def test_stacked_filesystems_details_in_full(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    (fs / "lower").mkdir()
    options = "rw,ecryptfs_fnek_sig=0123,ecryptfs_cipher=aes,ecryptfs_key_bytes=32"
    home = machine.mount("0:50", "home", "ecryptfs", str(fs / "lower"), options)
    (layer, *_) = machine.reader().stack(home).layers
    assert layer.details == (
        ("mountpoint", str(home)),
        ("lower directory", str(fs / "lower")),
        ("cipher", "aes"),
        ("key", "256-bit"),
    )
    gone = machine.mount("0:52", "gone", "overlay", "overlay", "rw,upperdir=/no/such/upper")
    stack = machine.reader().stack(gone)
    assert [x.name for x in stack.layers] == ["overlay"]
    assert stack.layers[0].details == (("mountpoint", str(gone)), ("upper directory", "/no/such/upper"))
    assert stack.notes == (f"overlay at {gone}: the directory under it is not reachable",)


def test_a_filesystem_on_no_device_it_can_name(machine: Machine) -> None:
    point = machine.mount("0:70", "pool", "btrfs", "pool-by-label")
    stack = machine.reader().stack(point)
    assert [x.name for x in stack.layers] == ["btrfs"]
    assert stack.notes == (f"btrfs at {point}: no block device found under it",)
    missing = machine.mount("254:9", "ghost", "ext4", "/dev/vdz")  # a number /sys does not know
    assert machine.reader().stack(missing).notes == (f"block device 254:9: not in {machine.sys}/dev/block",)


def test_fuse_without_a_subtype_fuseblk_and_overlays_that_point_at_each_other(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    (fs / "c").mkdir()
    bare = machine.mount("0:80", "bare", "fuse", "encfs")  # an old mount helper names no subtype
    argv = [["encfs", str(fs / "c"), str(bare)]]
    stack = machine.reader(daemons=lambda m: argv if m == bare else []).stack(bare)
    assert [(x.kind, x.name, x.encrypted) for x in stack.layers[:2]] == [
        (LayerKind.FUSE, "encfs", True),
        (LayerKind.FILESYSTEM, "ext4", False),
    ]
    machine.disk("sdb", "8:16")
    ntfs = machine.mount("8:16", "usb", "fuseblk", "/dev/sdb", "rw,user_id=0")
    assert [(x.kind, x.name) for x in machine.reader().stack(ntfs).layers] == [
        (LayerKind.FILESYSTEM, "fuseblk"),
        (LayerKind.DISK, "sdb"),
    ]
    # two overlays, each backed by a directory of the other's: read once round, not forever
    a, b = machine.root / "a", machine.root / "b"
    machine.mount("0:81", "a", "fuse.gocryptfs", str(b / "x"))
    machine.mount("0:82", "b", "fuse.gocryptfs", str(a / "y"))
    (a / "y").mkdir()
    (b / "x").mkdir()
    looped = machine.reader().stack(a)
    assert [(x.name, x.depth) for x in looped.layers] == [
        ("gocryptfs", 0),
        ("gocryptfs", 1),
        ("gocryptfs", 2),
    ]
    # an overlayfs whose upper directory is inside itself is not on it
    inside = machine.mount("0:83", "ov", "overlay", "overlay", f"rw,upperdir={machine.root / 'ov' / 'up'}")
    (inside / "up").mkdir()
    assert [x.name for x in machine.reader().stack(inside).layers] == ["overlay"]


def test_a_fuse_overlay_over_an_fscrypt_directory_nests_each_below_the_other(machine: Machine) -> None:
    machine.disk("vda", "254:0")
    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    secret = fs / "secret"
    secret.mkdir()
    plain = machine.mount("0:90", "plain", "fuse.gocryptfs", str(secret))

    def policy(path: Path) -> tuple[int, int, int, int] | None:
        return (2, 1, 4, 0x03) if path == secret else None

    stack = machine.reader(policy=policy).stack(plain)
    assert stack.path == str(plain)
    assert [(x.kind, x.depth) for x in stack.layers] == [
        (LayerKind.FUSE, 0),
        (LayerKind.FSCRYPT, 1),
        (LayerKind.FILESYSTEM, 2),
        (LayerKind.DISK, 3),
    ]
    assert stack.layers[1].detail("filename padding") == "32 bytes"
    assert stack.encrypted_sentence() == (
        "your scratch space is on gocryptfs and fscrypt (AES-256-XTS): plain here is encrypted; "
        "each figure is the cost of adding a layer to it"
    )


@pytest.mark.parametrize(
    ("line", "uuid", "want"),
    [
        # a table cut short: what it has, and no guess at the rest
        (
            "0 8 crypt aes-xts-plain64",
            "",
            {
                "cipher": "aes-xts-plain64",
                "key held": "in the table",
                "sector size": "512 bytes",
                "flags": "none",
            },
        ),
        (
            "0 8 crypt aes-xts-plain64 ABCDEF0123456789abcdef0123456789 0 7:0",
            "CRYPT-PLAIN-x",
            {
                "format": "PLAIN",
                "cipher": "aes-xts-plain64",
                "key": "128-bit key",
                "key held": "in the table",
                "sector size": "512 bytes",  # no options: dm-crypt's defaults
                "flags": "none",
            },
        ),
        # the count says how many options there are: what comes after them is not one
        (
            "0 8 crypt aes-xts-plain64 :abc:logon:x 0 7:0 8 2 sector_size:4096 integrity:16 same_cpu_crypt",
            "CRYPT",
            {
                "cipher": "aes-xts-plain64",
                "key held": "in the kernel keyring",
                "data starts at": "byte 4,096 of its device",
                "sector size": "4096 bytes",
                "flags": "none",
                "integrity": "?, 16-byte tags",
            },
        ),
        (
            "0 8 crypt aes-xts-plain64 - 0 7:0 8 x same_cpu_crypt",  # no count where one belongs: no option
            "",
            {
                "cipher": "aes-xts-plain64",
                "key held": "in the table",
                "data starts at": "byte 4,096 of its device",
                "sector size": "512 bytes",
                "flags": "none",
            },
        ),
    ],
)
def test_a_crypt_table_read_as_far_as_it_goes(line: str, uuid: str, want: dict[str, str]) -> None:
    layer = _crypt_layer("dm-3 (x)", uuid, line, 2)
    assert dict(layer.details) == want
    assert (layer.name, layer.depth, layer.encrypted) == ("dm-3 (x)", 2, True)


def test_an_fscrypt_policy_s_every_word() -> None:
    ext4 = MountInfo("254:0", "/", Path("/x"), "ext4", "/dev/vda", "rw,inlinecrypt,noatime", "rw")
    layer = _fscrypt_layer((2, 99, 10, 0x01 | 0x04 | 0x08), 3, ext4)
    assert (layer.kind, layer.name, layer.encrypted, layer.depth) == (LayerKind.FSCRYPT, "fscrypt", True, 3)
    assert layer.details == (
        ("policy", "v2"),
        ("contents", "mode 99"),
        ("filenames", "AES-256-HCTR2"),
        ("filename padding", "8 bytes"),
        ("flags", "DIRECT_KEY, IV_INO_LBLK_64"),
        ("inline encryption", "asked (inlinecrypt)"),
    )
    plain = _fscrypt_layer((1, 1, 4, 0x00), 0, dataclasses.replace(ext4, options="rw"))
    assert dict(plain.details)["flags"] == "none" and dict(plain.details)["filename padding"] == "4 bytes"
    assert "inline encryption" not in dict(plain.details)


@pytest.mark.parametrize(
    ("args", "value"),
    [
        (["--config", "/etc/r.conf"], "/etc/r.conf"),
        (["rclone", "--config=/a=b.conf", "x:"], "/a=b.conf"),
        (["rclone", "mount", "--config"], None),  # a flag with nothing after it
        (["rclone", "--configure", "x"], None),
    ],
)
def test_a_flag_s_value(args: list[str], value: str | None) -> None:
    assert _flag_value(args, "--config") == value


def test_the_words_of_mappings_zfs_and_stacked_layers(machine: Machine) -> None:
    """The details of a device-mapper mapping that is neither crypt nor LVM, a nested ZFS
    dataset whose pool cannot be listed, an eCryptfs mount that names no cipher and an
    rclone remote whose config is gone, to the word and the depth."""
    vda = machine.disk("vda", "254:0")
    machine.mapping("dm-2", "253:2", "flaky", "", "0 8 linear 254:0 0\n8 8 error", vda)
    mapped = machine.mount("253:2", "m", "ext4", "/dev/mapper/flaky")
    _fs, dm, disk = machine.reader().stack(mapped).layers
    assert dm.details == (("is", "mapping"), ("targets", "linear, error"), ("size", "512.0 MiB"))
    assert (dm.kind, dm.encrypted, dm.depth, disk.depth) == (LayerKind.DEVICE_MAPPER, False, 1, 2)

    fs = machine.mount("254:0", "fs", "ext4", "/dev/vda")
    data = machine.mount("0:60", "tank", "zfs", "tank/home/me")
    pools: list[str] = []

    def refused(pool: str) -> list[str]:
        pools.append(pool)
        raise ProvisionError("zpool is not installed")

    asked: list[str] = []
    zfs = machine.reader(
        zfs=lambda d: asked.append(d) or {"encryption": "off", "keystatus": ""}, vdevs=refused
    )
    stack = zfs.stack(data)
    assert (asked, pools) == (["tank/home/me"], ["tank"])
    assert stack.layers[0].details == (("mountpoint", str(data)), ("encryption", "off"))
    assert stack.notes == ("ZFS pool tank: zpool is not installed",)

    (fs / "low").mkdir()
    home = machine.mount("0:50", "home", "ecryptfs", str(fs / "low"), "rw,ecryptfs_sig=01")
    ecr, ext4, _vda = machine.reader().stack(home).layers
    assert ecr.details == (("mountpoint", str(home)), ("lower directory", str(fs / "low")), ("cipher", "?"))
    assert (ecr.kind, ecr.depth, ext4.depth) == (LayerKind.STACKED, 0, 1)

    cloud = machine.mount("0:43", "cloud", "fuse.rclone", "secret:sub:dir")
    gone = fs / "gone.conf"
    argv = [["rclone", "mount", "--config", str(gone), "secret:sub:dir", str(cloud)]]
    (layer,) = machine.reader(daemons=lambda _m: argv).stack(cloud).layers
    assert layer.details == (
        ("mountpoint", str(cloud)),
        ("encrypts", f"unknown: its config file {gone} is gone"),
    )
    gone.write_text("[other]\ntype = local\n")  # there, but without this remote
    (layer,) = machine.reader(daemons=lambda _m: argv).stack(cloud).layers
    assert layer.detail("encrypts") == f"unknown: its config file {gone} has no remote secret"
    gone.write_text("# Encrypted rclone configuration File\n\nRCLONE_ENCRYPT_V0:\nAbCd\n")
    (layer,) = machine.reader(daemons=lambda _m: argv).stack(cloud).layers
    said = f"unknown: its config file {gone} cannot be read (an encrypted config?)"
    assert layer.detail("encrypts") == said
    (layer,) = machine.reader().stack(cloud).layers
    assert layer.detail("encrypts") == "only through a crypt remote; its daemon names no config file to tell"
