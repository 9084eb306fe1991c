"""Fleet pieces without hosts: addresses, hosts.toml, manifests, fio's client output, the spread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.fleet import client, hosts, manifest, spread
from cryptbench.fleet.address import Address, listen_address, parse
from cryptbench.model.errors import SafetyError, UsageError
from cryptbench.model.result import Comparison, TargetInfo
from cryptbench.pipeline.fleet_coordinator import Coordinator
from cryptbench.pipeline.fleet_hosts import Host
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.store.database import Store
from cryptbench.trial.context import NullProgress
from tests.support.paths import TESTS

CLIENT = TESTS / "fixtures" / "fio" / "client"
SERVERS = {"one": Address("ip", "127.0.0.1", 18891), "two": Address("ip", "127.0.0.2", 18892)}


# -- addresses ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fio", "shown"),
    [
        ("127.0.0.1", "ip:127.0.0.1,8765", "127.0.0.1:8765"),
        ("127.0.0.1:9000", "ip:127.0.0.1,9000", "127.0.0.1:9000"),
        ("[::1]:9000", "ip6:::1,9000", "[::1]:9000"),
        ("[::1]", "ip6:::1,8765", "[::1]:8765"),
        ("node-1.example:9000", "ip:node-1.example,9000", "node-1.example:9000"),
        ("unix:/run/cb/fio.sock", "sock:/run/cb/fio.sock", "unix:/run/cb/fio.sock"),
    ],
)
def test_address_forms(text: str, fio: str, shown: str) -> None:
    addr = parse(text, "--listen")
    assert addr.fio() == fio
    assert str(addr) == shown


@pytest.mark.parametrize(
    "text",
    ["", ":8765", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x", "::1:8765", "[::1", "unix:rel", "a b"],
)
def test_bad_addresses_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse(text, "--listen")


@pytest.mark.parametrize("text", ["127.0.0.1", "127.0.0.5:9", "[::1]:9", "unix:/tmp/x.sock", "localhost:9"])
def test_serve_listens_on_loopback_and_sockets(text: str) -> None:
    assert listen_address(text, allow_remote=False).loopback_only()


@pytest.mark.parametrize("text", ["0.0.0.0", "[::]:9", "198.18.0.2:8765", "10.1.2.3", "8.8.8.8"])
def test_serve_refuses_reachable_addresses_without_allow_remote(text: str) -> None:
    with pytest.raises(UsageError, match="without authentication"):
        listen_address(text, allow_remote=False)
    assert listen_address(text, allow_remote=True).fio().startswith(("ip:", "ip6:"))


def test_serve_refuses_host_names_it_cannot_judge() -> None:
    with pytest.raises(UsageError, match="not a host name"):
        listen_address("node1:8765", allow_remote=True)
    assert listen_address("localhost", allow_remote=False) == Address("ip", "127.0.0.1", 8765)


# -- hosts.toml -----------------------------------------------------------------------


def _hosts(entries: list[dict[str, Any]]) -> list[hosts.HostSpec]:
    return hosts.parse_hosts({"host": entries}, "hosts.toml")


def test_hosts_toml(tmp_path: Path) -> None:
    f = tmp_path / "hosts.toml"
    f.write_text(
        '[[host]]\nname = "n1"\naddress = "127.0.0.1:8766"\n'
        'manifest_command = "ssh n1 cryptbench serve --print-manifest"\n'
        '[[host]]\nname = "n2"\naddress = "[::1]:8767"\n'
        'manifest_command = ["cat", "/path with space/m.json"]\n'
    )
    found = hosts.load(f)
    assert [h.name for h in found] == ["n1", "n2"]
    assert found[0].manifest_command == ("ssh", "n1", "cryptbench", "serve", "--print-manifest")
    assert found[1].manifest_command == ("cat", "/path with space/m.json")
    assert found[1].address == Address("ip6", "::1", 8767)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([], "no \\[\\[host\\]\\]"),
        ([{"name": "a", "address": "127.0.0.1", "manifest_command": "x", "port": 1}], "unknown key"),
        ([{"name": "a", "address": "127.0.0.1"}], "lacks 'manifest_command'"),
        ([{"name": "a/b", "address": "127.0.0.1", "manifest_command": "x"}], "must be 1 to 40"),
        ([{"name": "a", "address": "127.0.0.1", "manifest_command": ""}], "empty"),
        ([{"name": "a", "address": "127.0.0.1", "manifest_command": [1]}], "array of strings"),
        ([{"name": "a", "address": "127.0.0.1", "manifest_command": "'unclosed"}], "quotation"),
        (
            [
                {"name": "a", "address": "127.0.0.1", "manifest_command": "x"},
                {"name": "a", "address": "127.0.0.2", "manifest_command": "x"},
            ],
            "given twice",
        ),
        (
            [
                {"name": "a", "address": "127.0.0.1:9", "manifest_command": "x"},
                {"name": "b", "address": "127.0.0.1:9", "manifest_command": "x"},
            ],
            "share the address",
        ),
    ],
)
def test_bad_hosts_toml(entries: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _hosts(entries)


def test_hosts_toml_that_is_not_toml(tmp_path: Path) -> None:
    f = tmp_path / "hosts.toml"
    f.write_text("[[host]\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        hosts.load(f)
    with pytest.raises(UsageError, match=r"missing\.toml: No such file"):
        hosts.load(tmp_path / "missing.toml")


# -- manifests ------------------------------------------------------------------------

SCRATCH = "/var/tmp/cryptbench/run-1"


def _target(name: str, backend: str, baseline: str | None, encrypted: bool) -> dict[str, Any]:
    return {
        "name": name,
        "backend": backend,
        "baseline": baseline,
        "encrypted": encrypted,
        "io_mode": "direct",
        "direct_io": "honoured",
        "direct_io_reason": "probed",
        "marker_in_backing": not encrypted,
        "encryption_verified": True if encrypted else None,
        "details": {},
        "data_file": f"{SCRATCH}/targets/{name}/cryptbench.dat",
    }


def _manifest(**changes: Any) -> dict[str, Any]:
    m = {
        "schema": manifest.SCHEMA,
        "cryptbench": "0.1.0",
        "listen": "127.0.0.1:8765",
        "scratch": SCRATCH,
        "size": 8 << 20,
        "ioengine": "io_uring",
        "zero_data": False,
        "targets": [
            _target("plain", "plain", None, False),
            _target("ext4-loop", "ext4-loop", "plain", False),
            _target("fscrypt", "fscrypt", "ext4-loop", True),
        ],
        "skipped": [],
        "added_baselines": ["plain", "ext4-loop"],
        "environment": {"hostname": "n1"},
    }
    m.update(changes)
    return m


def test_manifest_parses() -> None:
    m = manifest.parse(json.dumps(_manifest()), "host n1")
    assert [t.name for t in m.targets] == ["plain", "ext4-loop", "fscrypt"]
    fscrypt = m.target("fscrypt")
    assert fscrypt is not None
    stored = fscrypt.on_host("n1")
    assert (stored.name, stored.baseline, stored.host) == ("n1/fscrypt", "n1/ext4-loop", "n1")
    assert stored.encryption_verified is True
    assert m.size == 8 << 20 and m.ioengine == "io_uring"
    assert m.added_baselines == ("plain", "ext4-loop")


def test_a_manifest_written_is_the_manifest_read() -> None:
    sent = _manifest(started_at="2026-11-24T18:00:00.000+00:00")
    m = manifest.parse(json.dumps(sent), "host n1")
    assert m.raw == sent and m.to_json() == sent  # serve writes what a coordinator reads back
    assert manifest.parse(json.dumps(m.to_json()), "host n1") == m


def test_a_manifest_with_bad_added_baselines_is_refused() -> None:
    with pytest.raises(UsageError, match="'added_baselines' has the wrong type"):
        manifest.parse(json.dumps(_manifest(added_baselines="plain")), "host n1")


def _host(name: str, **changes: Any) -> Any:
    from cryptbench.pipeline.fleet_hosts import Host

    spec = hosts.HostSpec(name, parse("127.0.0.1", "address"), ("true",))
    return Host(spec, manifest.parse(json.dumps(_manifest(**changes)), f"host {name}"))


def test_manifest_notes_say_which_targets_run_where_and_what_differs() -> None:
    from cryptbench.pipeline.fleet_hosts import Host, manifest_notes

    same = [_host("a"), _host("b")]
    assert manifest_notes(same) == []
    no_fscrypt = [_target("plain", "plain", None, False), _target("ext4-loop", "ext4-loop", "plain", False)]
    fleet = [
        _host("a"),
        _host(
            "b",
            targets=no_fscrypt,
            skipped=[{"backend": "fscrypt", "reason": "the kernel lacks fscrypt"}],
            ioengine="libaio",
        ),
        _host("c", targets=no_fscrypt[:1], environment={"hostname": "n3", "kernel": "6.1"}),
        Host(hosts.HostSpec("d", parse("127.0.0.4", "address"), ("true",)), None, "unreachable"),
    ]
    notes = manifest_notes(fleet)
    assert (
        "fscrypt runs on 1 of 3 hosts; not on b (the kernel lacks fscrypt), c (not asked of its serve)"
        in notes
    )
    assert "ext4-loop runs on 2 of 3 hosts; not on c (not asked of its serve)" in notes
    assert "the hosts differ in ioengine: a io_uring, b libaio, c io_uring" in notes
    assert "the hosts differ in kernel: a unknown, b unknown, c 6.1" in notes
    assert not any("plain runs" in n or "cryptbench version" in n for n in notes)


def _outside() -> dict[str, Any]:
    t = _target("plain", "plain", None, False)
    t["data_file"] = "/etc/passwd"
    return _manifest(targets=[t])


def _escaping() -> dict[str, Any]:
    t = _target("plain", "plain", None, False)
    t["data_file"] = f"{SCRATCH}/../../../etc/shadow"
    return _manifest(targets=[t])


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_manifest(schema=2), "schema"),
        (_manifest(size=True), "'size' has the wrong type"),
        (_manifest(size=0), "positive"),
        (_manifest(scratch="relative/dir"), "not an absolute path"),
        (_outside(), "outside the host's scratch"),
        (_escaping(), "outside the host's scratch"),
        (_manifest(targets=[_target("fscrypt", "fscrypt", "ext4-loop", True)]), "is not served"),
        (_manifest(targets=[_target("plain", "plain", None, False)] * 2), "twice"),
        (_manifest(targets=[{"name": "plain"}]), "lacks 'data_file'"),
    ],
)
def test_bad_manifests(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        manifest.parse(json.dumps(doc), "host n1")


def test_manifest_that_is_not_json() -> None:
    with pytest.raises(UsageError, match="host n1: the manifest is not JSON"):
        manifest.parse("serve: command not found", "host n1")
    with pytest.raises(UsageError, match="not a JSON object"):
        manifest.parse("[]", "host n1")


# -- job files sent to a server --------------------------------------------------------


def _opts(path: str) -> JobOptions:
    return JobOptions(Path(path), 8 << 20, True, "io_uring", False, 7)


def test_cryptbench_jobs_pass_the_check() -> None:
    data = f"{SCRATCH}/targets/fscrypt/cryptbench.dat"
    for job in (
        render_job(WorkloadSpec("w", "randwrite", 4096, 32), _opts(data)),
        render_layout(_opts(data)),
    ):
        client.check_job(job, SCRATCH)
        # the check read the job's file, and would refuse it elsewhere: it passed on its merits
        assert f"filename={data}" in job.splitlines()
        with pytest.raises(SafetyError, match="outside the host's scratch"):
            client.check_job(job, "/var/tmp/cryptbench/run-2")


@pytest.mark.parametrize(
    "extra", ["exec_prerun=rm -rf /", "exec_postrun = sh", "trigger=sh", "  TRIGGER_TIMEOUT=1", "trigger"]
)
def test_jobs_that_run_commands_are_refused(extra: str) -> None:
    text = render_job(WorkloadSpec("w", "write", 4096, 1), _opts(f"{SCRATCH}/d")) + extra + "\n"
    with pytest.raises(SafetyError, match="refusing to send a job"):
        client.check_job(text, SCRATCH)


@pytest.mark.parametrize("path", ["/var/tmp/other/d", f"{SCRATCH}/../x", "/var/tmp/cryptbench/run-10/d"])
def test_jobs_outside_the_hosts_scratch_are_refused(path: str) -> None:
    with pytest.raises(SafetyError, match="outside the host's scratch"):
        client.check_job(render_job(WorkloadSpec("w", "write", 4096, 1), _opts(path)), SCRATCH)


# -- fio's client output, as fio 3.33 printed it here ------------------------------------------


def _fixture(name: str) -> tuple[str, str]:
    return (CLIENT / f"{name}.stdout").read_text(), (CLIENT / f"{name}.stderr").read_text()


def _stats(stdout: str) -> list[dict[str, Any]]:
    return json.loads(stdout[stdout.index("\n{\n") + 1 :])["client_stats"]


def test_each_host_gets_its_own_entry_not_the_sum() -> None:
    out, err = _fixture("two-hosts")
    results = client.split(out, err, SERVERS)
    stats = {(e["hostname"], e["jobname"]): e for e in _stats(out)}
    for host, addr in SERVERS.items():
        r = results[host]
        assert r.error is None and not r.lost and r.measurement is not None
        entry = stats[(addr.host, "seq1m-q8-write")]
        assert r.measurement.throughput == entry["write"]["bw_bytes"]
        assert r.measurement.io_bytes == 4 << 20
        assert json.loads(r.raw or "") == entry
    total = next(e for e in _stats(out) if e["jobname"] == client.AGGREGATE)
    summed = total["write"]["bw_bytes"]
    assert all(r.measurement.throughput != summed for r in results.values() if r.measurement)


def test_a_host_killed_mid_job_is_lost_and_the_other_kept() -> None:
    out, err = _fixture("disconnected")
    results = client.split(out, err, SERVERS)
    assert results["one"].measurement is not None and not results["one"].lost
    assert results["two"].lost and results["two"].measurement is None
    assert "client: host=127.0.0.2 disconnected" in (results["two"].error or "")


def test_an_unreachable_host_is_lost_with_fios_reason() -> None:
    out, err = _fixture("unreachable")
    hosts_ = {"one": SERVERS["one"], "three": Address("ip", "127.0.0.3", 18893)}
    results = client.split(out, err, hosts_)
    assert results["one"].measurement is not None
    assert results["three"].lost
    assert "failed to connect to 127.0.0.3:18893" in (results["three"].error or "")


def test_a_frozen_host_is_lost_when_fio_gives_up_on_it() -> None:
    out, err = _fixture("frozen")
    results = client.split(out, err, SERVERS)
    assert results["one"].measurement is not None
    assert results["two"].lost and "fio: client 127.0.0.2 timed out" in (results["two"].error or "")


def test_a_host_dropped_without_a_word_is_left_for_a_probe_to_judge() -> None:
    out, err = _fixture("dropped")
    hosts_ = {"one": SERVERS["one"], "three": Address("ip", "127.0.0.3", 18893)}
    results = client.split(out, err, hosts_)
    assert results["one"].measurement is not None and not results["one"].unexplained
    assert results["three"].lost and results["three"].unexplained
    assert "fio returned no result for it" in (results["three"].error or "")
    # a host fio names is explained, however it went
    for name in ("disconnected", "frozen"):
        assert not any(r.unexplained for r in client.split(*_fixture(name), SERVERS).values())


def test_output_without_json_loses_every_host_with_fios_own_words() -> None:
    results = client.split("fio: unknown option\n", "fio: job file <x> open: No such file\n", SERVERS)
    for r in results.values():
        assert r.lost and not r.unexplained
        assert "fio: job file <x> open: No such file; fio: unknown option" in (r.error or "")


def test_an_invocation_of_one_dropped_host_prints_nothing_and_is_unexplained() -> None:
    # fio with its only host dropped exits 1 having printed nothing (seen with
    # tests/support/dropping_server.py): only a probe can say more
    results = client.split("", "", {"one": SERVERS["one"]})
    assert results["one"].lost and results["one"].unexplained


def test_a_dropped_host_that_fails_its_probe_is_gone_and_one_that_runs_it_may_run_again() -> None:
    dropped = {"one": SERVERS["one"], "two": SERVERS["two"]}
    judged = client._judge_dropped(dropped, {"one": "a probe job failed: fio: failed to connect"})
    assert judged["one"].lost and not judged["one"].innocent
    assert (judged["one"].error or "").startswith(
        "one (127.0.0.1:18891) stopped answering: a probe job failed"
    )
    assert judged["two"].innocent and not judged["two"].lost
    assert "dropped two (127.0.0.2:18892)" in (judged["two"].error or "")


def test_a_port_mismatch_is_not_a_result() -> None:
    out, err = _fixture("two-hosts")
    results = client.split(out, err, {"one": Address("ip", "127.0.0.1", 9999)})
    assert results["one"].lost


# -- the spread across hosts ---------------------------------------------------------------


def _on_host(name: str, host: str | None, encrypted: bool) -> TargetInfo:
    backend = name.split("/")[-1]
    return TargetInfo(name, backend, None, encrypted, "buffered", None, None, None, None, {}, host=host)


def _comparison(target: str, baseline: str, ratio: float, low: float, high: float) -> Comparison:
    change = (ratio - 1) * 100
    return Comparison("w", target, baseline, "baseline", "throughput", ratio, low, high, change, None, None)


def _doc(changes: dict[str, tuple[float, float, float]]) -> tuple[list[TargetInfo], list[Comparison]]:
    """Hosts' fscrypt-against-ext4-loop changes in speed (estimate, low, high, in percent,
    negative when slower), as a document holds them."""
    targets, comparisons = [], []
    for host, (c, low, high) in changes.items():
        targets += [_on_host(f"{host}/ext4-loop", host, False), _on_host(f"{host}/fscrypt", host, True)]
        comparisons.append(
            _comparison(f"{host}/fscrypt", f"{host}/ext4-loop", 1 + c / 100, 1 + low / 100, 1 + high / 100)
        )
        comparisons.append(_comparison(f"{host}/ext4-loop", f"{host}/plain", 0.9, 0.8, 1.0))
    return targets, comparisons


def test_spread_over_hosts() -> None:
    given = {"a": (-20, -23, -17), "b": (-22, -25, -19), "c": (-21, -26, -17), "d": (-60, -66, -55)}
    (row,) = spread.costs(*_doc(given))
    values = [c for c, _l, _h in given.values()]
    assert (row.target, row.baseline, row.hosts) == ("fscrypt", "ext4-loop", 4)
    assert row.median == pytest.approx(np.percentile(values, 50))
    assert row.p10 == pytest.approx(np.percentile(values, 10))
    assert row.p90 == pytest.approx(np.percentile(values, 90))
    assert row.worst_host == "d" and row.worst == pytest.approx(-60)
    assert (row.worst_low, row.worst_high) == pytest.approx((-66, -55))
    assert [(s.host, s.direction) for s in row.stand_out] == [("d", "slower")]
    assert row.stand_out[0].others == pytest.approx(-21)
    assert (row.stand_out[0].others_low, row.stand_out[0].others_high) == pytest.approx((-25, -17))


def test_a_host_off_the_others_median_but_within_their_intervals_does_not_stand_out() -> None:
    # a three-host fleet run on identical namespace hosts here: h1 read -97 % [-98, -95]
    given = {"h1": (-97, -98, -95), "h2": (-93, -96, -86), "h3": (-94, -96, -92)}
    (row,) = spread.costs(*_doc(given))
    assert row.stand_out == [] and row.worst_host == "h1"
    given["h1"] = (-99, -100, -97)  # its whole interval below both others' low ends
    (row,) = spread.costs(*_doc(given))
    assert [(s.host, s.direction) for s in row.stand_out] == [("h1", "slower")]


def test_a_host_stands_out_faster_too_and_noise_does_not() -> None:
    given = {"a": (-50, -55, -45), "b": (-52, -70, -30), "c": (-51, -54, -48), "d": (-10, -15, -5)}
    (row,) = spread.costs(*_doc(given))
    assert [(s.host, s.direction) for s in row.stand_out] == [("d", "faster")]


def test_two_hosts_have_nobody_to_stand_out_from() -> None:
    (row,) = spread.costs(*_doc({"a": (-10, -11, -9), "b": (-80, -81, -79)}))
    assert row.stand_out == [] and row.worst_host == "b"


def test_a_run_on_one_machine_has_no_spread() -> None:
    targets = [_on_host("fscrypt", None, True)]
    assert spread.costs(targets, [_comparison("fscrypt", "ext4-loop", 0.5, 0.4, 0.6)]) == []


# -- the coordinator's reruns ---------------------------------------------------------------


# what run_clients says of a host fio dropped without a word that then ran a probe job
DROPPED = client.HostResult(
    None, None, "fio dropped n1 without a word, yet it then ran a probe job", innocent=True
)


def _coordinator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: client.HostResult
) -> tuple[Coordinator, list[list[str]]]:
    """A coordinator over one host n1 whose every invocation comes back as `said`,
    and the hosts of each invocation it makes."""
    calls: list[list[str]] = []

    def run_clients(jobs: dict[str, Any], timeout: float) -> dict[str, client.HostResult]:
        calls.append(sorted(jobs))
        return {h: said for h in jobs}

    monkeypatch.setattr(client, "run_clients", run_clients)
    store = Store.open(tmp_path / "fleet.sqlite")
    run_id = store.insert_run("quick", {}, {}, "0")
    store.insert_fleet_host(run_id, "n1", "127.0.0.1:8765", None)
    spec = hosts.HostSpec("n1", Address("ip", "127.0.0.1", 8765), ("true",))
    m = manifest.parse(json.dumps(_manifest()), "host n1")
    jobs_dir = tmp_path / "jobs"
    jobs_dir.mkdir()
    c = Coordinator(store, run_id, [Host(spec, m)], 8 << 20, False, {"w": 1}, jobs_dir, NullProgress())
    return c, calls


def test_a_host_whose_layout_keeps_being_dropped_loses_its_data_file_after_one_more_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, calls = _coordinator(tmp_path, monkeypatch, DROPPED)
    c.lay_out("fscrypt", ["n1"])
    assert calls == [["n1"], ["n1"]]
    assert c.lost == {
        "n1/fscrypt": "n1/fscrypt: its data file could not be written: " + (DROPPED.error or "")
    }
    assert c.hosts["n1"].failed is None  # the host answered its probe: not gone


def test_a_trial_lost_with_its_invocation_runs_again_once_then_counts_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, calls = _coordinator(tmp_path, monkeypatch, DROPPED)
    c.block(WorkloadSpec("w", "write", 1 << 20, 8), "fscrypt", ["n1"], 0, 0)
    assert calls == [["n1"], ["n1"]]
    assert (c.ok, c.failed) == (0, 1)
    assert c.hosts["n1"].failed is None and not c.lost
