"""The cache of initialised data directories (runners.templates): keys, building once, the
checks that refuse a partial or corrupt entry, concurrent builds, copies."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runners import bare, sandbox, templates
from runners.templates import Template, TemplateError, TemplateKey

KEY = TemplateKey("test", {"server": "/usr/sbin/mariadbd:1:2"})


def fake_init(raw: Path) -> None:
    """What an initialisation leaves: directories, small files, one large preallocated file
    that is mostly zeros (InnoDB's redo log), files that identify one server."""
    (raw / "mysql").mkdir(mode=0o700)
    (raw / "mysql" / "user.MAD").write_bytes(b"root" * 100)
    (raw / "ibdata1").write_bytes(b"\x01" * 4096 + b"\x00" * 65536)
    with open(raw / "ib_logfile0", "wb") as f:
        f.write(b"header" * 100)
        os.posix_fallocate(f.fileno(), 0, 1 << 20)
    (raw / "auto.cnf").write_text("[auto]\nserver-uuid=1\n")
    (raw / "server-key.pem").write_text("KEY")


class Builds:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, raw: Path) -> None:
        self.count += 1
        fake_init(raw)


def test_key_digest_is_stable_and_every_field_counts() -> None:
    assert KEY.digest == TemplateKey("test", {"server": "/usr/sbin/mariadbd:1:2"}).digest
    assert KEY.digest != TemplateKey("test", {"server": "/usr/sbin/mariadbd:1:3"}).digest
    assert KEY.digest != TemplateKey("other", {"server": "/usr/sbin/mariadbd:1:2"}).digest
    assert KEY.digest != TemplateKey("test", {"server": "/usr/sbin/mariadbd:1:2",
                                              "innodb_page_size": "8k"}).digest


def test_file_identity_changes_with_the_binary(tmp_path: Path) -> None:
    binary = tmp_path / "mariadbd"
    binary.write_bytes(b"v1")
    first = templates.file_identity(binary)
    binary.write_bytes(b"v1.1")
    assert templates.file_identity(binary) != first
    link = tmp_path / "link"
    link.symlink_to(binary)
    assert templates.file_identity(link) == templates.file_identity(binary)


def test_install_key_has_init_settings_not_ports_paths_or_credentials(tmp_path: Path) -> None:
    def cfg(port: int, **extra: str) -> dict[str, str]:
        return {"port": str(port), "server_id": str(port), "datadir": f"/r{port}/data",
                "socket": f"/r{port}/s", "wsrep_sst_auth": f"lab_admin:{port}secret",
                "wsrep_cluster_address": f"gcomm://127.0.0.1:{port}",
                "wsrep_provider_options": f"gcache.size=64M; gmcast.listen_addr=tcp://"
                                          f"127.0.0.1:{port}; ist.recv_addr=127.0.0.1:{port}",
                **extra}

    a, b = bare.install_key(cfg(31001)), bare.install_key(cfg(42002))
    assert a.digest == b.digest  # another run's ports, paths and password: the same template
    assert not any("secret" in v for v in a.fields.values())
    assert a.fields["config:wsrep_provider_options"] == "gcache.size=64M"
    assert bare.install_key(cfg(31001, innodb_page_size="8k")).digest != a.digest
    assert bare.install_key(cfg(31001, lower_case_table_names="1")).digest != a.digest
    other = {**cfg(31001), "wsrep_provider_options": "gcache.size=128M"}
    assert bare.install_key(other).digest != a.digest


def test_sandbox_key_names_dbdeployer_and_the_server(tmp_path: Path) -> None:
    base = tmp_path / "10.11.19"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "mysqld").write_bytes(b"server")
    tool = tmp_path / "dbdeployer"
    tool.write_bytes(b"tool")
    key = sandbox.template_key(str(tool), tmp_path, "10.11.19", "mariadb")
    assert key.fields["version"] == "10.11.19"
    assert "bin/mysqld" in key.fields
    (base / "bin" / "mysqld").write_bytes(b"server, rebuilt")
    assert sandbox.template_key(str(tool), tmp_path, "10.11.19", "mariadb").digest != key.digest


def test_built_once_then_used(tmp_path: Path) -> None:
    build = Builds()
    t1 = templates.ensure(KEY, build, root=tmp_path)
    t2 = templates.ensure(KEY, build, root=tmp_path)
    assert build.count == 1
    assert t1.path == t2.path == tmp_path / KEY.digest
    assert templates.problem(t1.path) is None
    names = {p.name for p in t1.data.iterdir()}
    assert names == {"mysql", "ibdata1", "ib_logfile0"}  # auto.cnf and *.pem left out
    assert not list(tmp_path.glob(f".{KEY.digest}.*"))  # no build directory left behind


def test_template_is_stored_sparse(tmp_path: Path) -> None:
    t = templates.ensure(KEY, Builds(), root=tmp_path)
    log = t.data / "ib_logfile0"
    assert log.stat().st_size == 1 << 20
    assert log.stat().st_blocks * 512 < 1 << 20
    assert ("ib_logfile0", 1 << 20) in t.preallocated()


@pytest.mark.parametrize("damage, why", [
    (lambda t: (t.path / templates.MARKER).unlink(), "no COMPLETE marker"),
    (lambda t: (t.data / "ibdata1").write_bytes(b"\x01" * 100), "bytes"),
    (lambda t: (t.data / "mysql" / "user.MAD").write_bytes(b"ROOT" * 100), "content"),
    (lambda t: (t.data / "mysql" / "user.MAD").unlink(), "missing"),
    (lambda t: (t.data / "stray").write_text("x"), "not in the manifest"),
    (lambda t: os.chmod(t.data / "mysql", 0o777), "mode"),
    (lambda t: (t.path / templates.MANIFEST).write_text("{}"), "does not match"),
])
def test_a_damaged_template_is_detected_and_rebuilt(tmp_path: Path, damage: object,
                                                    why: str) -> None:
    build = Builds()
    t = templates.ensure(KEY, build, root=tmp_path)
    damage(t)  # type: ignore[operator]
    problem = templates.problem(t.path)
    assert problem is not None and why in problem
    again = templates.ensure(KEY, build, root=tmp_path)
    assert build.count == 2
    assert templates.problem(again.path) is None
    assert (again.data / "mysql" / "user.MAD").read_bytes() == b"root" * 100
    assert not list(tmp_path.glob(".broken-*"))


def test_a_build_that_fails_leaves_nothing_usable(tmp_path: Path) -> None:
    def broken(raw: Path) -> None:
        (raw / "half").write_text("x")
        raise RuntimeError("initialisation failed")

    with pytest.raises(RuntimeError):
        templates.ensure(KEY, broken, root=tmp_path)
    assert not (tmp_path / KEY.digest).exists()
    assert not list(tmp_path.glob(f".{KEY.digest}.*"))
    build = Builds()
    templates.ensure(KEY, build, root=tmp_path)
    assert build.count == 1


def test_a_build_naming_its_directory_is_refused(tmp_path: Path) -> None:
    def baked(raw: Path) -> None:
        (raw / "mysql-bin.index").write_text(f"{raw}/mysql-bin.000001\n")

    with pytest.raises(TemplateError, match="names its directory"):
        templates.ensure(KEY, baked, root=tmp_path)
    assert not (tmp_path / KEY.digest).exists()


def test_two_runs_building_at_once_build_once(tmp_path: Path) -> None:
    count = 0
    lock = threading.Lock()

    def slow(raw: Path) -> None:
        nonlocal count
        with lock:
            count += 1
        time.sleep(0.3)
        fake_init(raw)

    got: list[Template] = []
    threads = [threading.Thread(target=lambda: got.append(templates.ensure(KEY, slow,
                                                                           root=tmp_path)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert count == 1
    assert len(got) == 3 and all(templates.problem(t.path) is None for t in got)


def test_copy_gives_the_files_and_their_allocation(tmp_path: Path) -> None:
    t = templates.ensure(KEY, Builds(), root=tmp_path / "cache")
    dest = tmp_path / "node" / "data"
    templates.copy_into(t, dest)
    assert (dest / "mysql" / "user.MAD").read_bytes() == b"root" * 100
    assert (dest / "ib_logfile0").read_bytes()[:600] == b"header" * 100
    assert (dest / "ib_logfile0").stat().st_blocks * 512 >= 1 << 20  # fallocated as it was
    assert (dest / "mysql").stat().st_mode & 0o777 == 0o700
    (dest / "ibdata1").write_bytes(b"changed")  # a node's writes never reach the template
    assert templates.problem(t.path) is None
    with pytest.raises(TemplateError, match="not empty"):
        templates.copy_into(t, dest)


def test_copy_commands_give_the_files_and_their_allocation(tmp_path: Path) -> None:
    """What the sandboxes' init_db runs: the copy, then one process allocating every
    preallocated file as the initialisation had (a sparse copy would not be)."""
    t = templates.ensure(KEY, Builds(), root=tmp_path / "cache")
    dest = tmp_path / "sandbox" / "data"
    dest.mkdir(parents=True)
    commands = templates.copy_commands(t, str(dest))
    assert len(commands) == 2  # one copy, one allocation for all the files
    for argv in commands:
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
    assert (dest / "ib_logfile0").read_bytes()[:600] == b"header" * 100
    assert (dest / "ib_logfile0").stat().st_blocks * 512 >= 1 << 20
    assert (dest / "mysql" / "user.MAD").read_bytes() == b"root" * 100


def test_init_script_copies_the_template_and_keeps_dbdeployer_s_uuid_fix(tmp_path: Path
                                                                         ) -> None:
    t = templates.ensure(KEY, Builds(), root=tmp_path / "cache dir")
    text = sandbox.init_script(t)
    assert text.startswith("#!{{.ShellPath}}")
    assert f"'{t.data}/.' \"$DATADIR\" || exit 1" in text
    # every preallocated file's allocation in one process: this interpreter, isolated
    assert f"{shlex.quote(sys.executable)} -I -S -c " in text
    assert "\"$DATADIR\" ib_logfile0 1048576" in text and text.count("posix_fallocate") == 1
    assert "{{.FixUuidFile1}}" in text and "{{.FixUuidFile2}}" in text
    weird = Template(tmp_path / "{{x}}", t.manifest)
    with pytest.raises(TemplateError, match="braces"):
        sandbox.init_script(weird)


def test_templates_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_TEMPLATES", raising=False)
    assert templates.enabled()
    for off in ("off", "0", "no", "OFF"):
        monkeypatch.setenv("LAB_TEMPLATES", off)
        assert not templates.enabled()


def test_cache_root_is_under_lab_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAB_HOME", str(tmp_path))
    assert templates.cache_root() == tmp_path / "templates"


def test_clean_removes_entries_and_unfinished_builds(tmp_path: Path) -> None:
    templates.ensure(KEY, Builds(), root=tmp_path)
    (tmp_path / f".{KEY.digest}.abc").mkdir()  # a build whose process died
    removed = templates.clean(tmp_path)
    assert tmp_path / KEY.digest in removed
    assert not [p for p in tmp_path.iterdir() if p.suffix != ".lock"]


GALERA = """experiment "g" {
  topology galera { nodes g1, g2, g3 }
  config { innodb_flush_log_at_trx_commit = 2 }
  duration 5s
}
"""


def test_two_runs_of_one_galera_plan_share_a_template_and_its_nodes_too(tmp_path: Path,
                                                                         monkeypatch: pytest.
                                                                         MonkeyPatch) -> None:
    from dsl.api import plan_text
    from dsl.compile import for_base_port

    binary = tmp_path / "mariadbd"
    binary.write_bytes(b"server")
    monkeypatch.setattr(bare, "require", lambda name: str(binary))
    monkeypatch.setattr(bare, "_installer", lambda: str(binary))
    runtime = {"wsrep_provider": "/usr/lib/galera/libgalera_smm.so"}
    keys = set()
    for base, secret in ((31200, "a:b"), (42400, "c:d")):
        plan = for_base_port(plan_text(GALERA), base)
        for node in plan.cells[0].nodes:
            cfg = bare.node_config(node, tmp_path / str(base) / node.name,
                                   {**runtime, "wsrep_sst_auth": secret})
            keys.add(bare.install_key(cfg).digest)
    assert len(keys) == 1


def test_an_entry_checked_once_is_checked_again_when_a_file_changes(tmp_path: Path) -> None:
    t = templates.ensure(KEY, Builds(), root=tmp_path)
    assert templates.problem(t.path) is None  # remembered as whole
    f = t.data / "mysql" / "user.MAD"
    st = f.stat()
    time.sleep(0.01)
    f.write_bytes(b"ROOT" * 100)  # same size, and the old modification time put back
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert templates.problem(t.path) is not None  # its change time moved: read again
    assert templates.problem(t.path, recheck=True) is not None


def test_a_cache_that_cannot_take_a_template_never_stops_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    from types import SimpleNamespace

    def full(key: TemplateKey, build: object) -> Template:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(templates, "ensure", full)
    tool = tmp_path / "dbdeployer"
    tool.write_bytes(b"tool")
    run = SimpleNamespace(dir=tmp_path)
    # None: dbdeployer initialises each sandbox itself, as with LAB_TEMPLATES=off
    assert sandbox.sandbox_template(run, str(tool), tmp_path, "10.11.19",  # type: ignore[arg-type]
                                    "mariadb", 3307) is None
    assert not (tmp_path / "init_db.template").exists()
