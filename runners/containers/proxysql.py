"""ProxySQL in a container of its own on the run's network (``router proxysql`` on ``backend
containers``), from the image the router names (``image "proxysql/proxysql:2.7.1"``; by
default ``proxysql/proxysql``, pulled by the engine when it is not there).

Everything but where things are is ``runners.proxysql.ProxySQL``'s: the same configuration
(admin, stats and monitor users made for the run, hostgroups, the reader port's query rule,
monitor intervals), set through the same admin statements. What changes: the servers are the
nodes by name on their own port (``db1:3306``; through their client links,
``toxiproxy:<port>``, when the run has links), ProxySQL listens on every address of its
container on the run's port numbers, and those ports (admin, writer, reader) are published on
the engine's address, where the lab reaches the admin interface.

When the router names no image and a ``proxysql`` binary is found on this machine (PATH or
``LAB_BIN_PATH``, as natively), the image is made here instead of pulled: the lab's node image
(Debian 12, which has the libraries ProxySQL's release binary needs) with that binary added
(``local_image``: ``rcl-proxysql:<binary digest>-<node image tag>``, cached by the engine). A
file that names an image (``image "proxysql/proxysql:2.7.1"``) gets that one, pulled by the
engine; that path is not exercised here: no registry is reachable from this project's machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runners.containers import engine as engines
from runners.containers import image as images
from runners.containers.part import ContainerPart
from runners.errors import ComponentError
from runners.haproxy import Backend
from runners.mysql import Credentials
from runners.proxysql import ProxySQL
from runners.proxysql_config import Mode, Server, config_text
from runners.runtime import Run

DEFAULT_IMAGE = "proxysql/proxysql"
CONFIG_PATH = "/etc/lab/proxysql.cnf"
DATADIR = "/var/lib/proxysql"
NAME = "router"  # its alias on the run's network
SERVER_PORT = 3306
BINARY_IN_IMAGE = "/usr/local/bin/proxysql"


def local_image_tag(binary: Path, base: str) -> str:
    digest = hashlib.sha256(binary.read_bytes()).hexdigest()[:12]
    return f"rcl-proxysql:{digest}-{base.rsplit(':', 1)[-1]}"


def build_context(binary: Path, base: str) -> bytes:
    """A build context (tar): ``FROM`` the node image, the binary and an empty datadir added
    (``COPY`` only: nothing runs at build time)."""
    dockerfile = (f"FROM {base}\nCOPY proxysql {BINARY_IN_IMAGE}\n"
                  f"COPY datadir {DATADIR}\n").encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        tar.add(str(binary), arcname="proxysql")
        d = tarfile.TarInfo("datadir")
        d.type = tarfile.DIRTYPE
        d.mode = 0o755
        tar.addfile(d)
    return buf.getvalue()


def local_image(client: Any, binary: Path, base: str) -> str:
    """The node image ``base`` with this machine's ``proxysql`` binary: the engine's copy,
    else built now (seconds: two layers copied). Returns its tag."""
    tag = local_image_tag(binary, base)
    found = images.find_image(client, tag)
    if found is not None:
        return str(found.tags[0]) if found.tags else tag
    try:
        client.images.build(fileobj=io.BytesIO(build_context(binary, base)),
                            custom_context=True, tag=tag, rm=True)
    except Exception as e:  # noqa: BLE001 - any failure of the engine's build
        raise ComponentError("proxysql (container)", f"could not build {tag} from {base} and "
                             f"{binary}: {e}") from None
    found = images.find_image(client, tag)
    return str(found.tags[0]) if found is not None and found.tags else tag


class ContainerProxySQL(ContainerPart, ProxySQL):
    def __init__(self, run: Run, backends: list[Backend], writers: list[str], readers: list[str],
                 check_interval: float, writer_port: int, reader_port: int, app: Credentials,
                 monitor: Credentials, mode: Mode, *, eng: engines.Engine, image: str,
                 network: Any, via: dict[str, tuple[str, int]] | None = None,
                 settings: Mapping[str, str] | None = None) -> None:
        super().__init__(run, backends, writers, readers, check_interval, writer_port,
                         reader_port, app, monitor, mode, settings=settings)
        self.engine = eng
        self.image = image
        self.network = network
        self.via = dict(via or {})  # node -> (host, port) ProxySQL reaches it at
        self.container: Any = None
        self.admin_host = eng.address

    def start(self, writer_check: Callable[[str], bool], reader_check: Callable[[str], bool],
              ready_timeout: float = 15.0) -> None:
        try:
            super().start(writer_check, reader_check, ready_timeout)
        except ComponentError as e:
            raise ComponentError("proxysql (container)", e.message, self.save_log()) from None

    def start_process(self, ready_timeout: float = 15.0) -> float:
        """``ProxySQL.start_process`` (once more after a crash while starting) on its
        container; a failure carries the container's output and ProxySQL's log."""
        try:
            return super().start_process(ready_timeout)
        except ComponentError as e:
            raise ComponentError("proxysql (container)", e.message, self.save_log()) from None

    def _crash_signal(self) -> int | None:
        """The signal that ended ProxySQL, from its container's exit code: its init exits
        with 128 + the signal that ended its one child (139: SIGSEGV); None while it runs or
        when it exited by itself."""
        with contextlib.suppress(Exception):
            state = engines.inspect(self.engine.client, self.container.id).get("State", {})
            code = state.get("ExitCode")
            if not state.get("Running") and isinstance(code, int) and 128 < code < 128 + 65:
                return code - 128
        return None

    def config_text(self) -> str:
        return config_text(Path(DATADIR), self.admin_creds, self.stats_creds, self.admin_port,
                           self.writer_port, self.reader_port, self.pgsql_admin_port,
                           self.pgsql_port, listen="0.0.0.0")

    def servers(self) -> tuple[Server, ...]:
        out = []
        for b in self.backends:
            host, port = self.via.get(b.name, (b.name, SERVER_PORT))
            out.append(Server(b.name, port, host))
        return tuple(out)

    # --- faults of its own process: its container's (ProxySQL is the container's one process
    # under its init; a started container reads the configuration it saved in its datadir)
    def kill_process(self) -> None:
        """SIGKILL to the container: clients' connections through it break at once."""
        if not self.running():
            raise self._fail("cannot kill: not running")
        with contextlib.suppress(Exception):
            self.container.unpause()  # a paused one dies as well
        self.container.kill(signal="SIGKILL")
        self.container.wait(timeout=10)

    def pause_process(self) -> None:
        if not self.running():
            raise self._fail("cannot pause: not running")
        self.container.pause()

    def resume_process(self) -> None:
        with contextlib.suppress(Exception):
            self.container.unpause()

    def stop_process(self, timeout: float = 20.0) -> None:
        """SIGTERM through the container's init, as its service would: it closes its
        listeners and exits."""
        if not self.running():
            return
        self.resume_process()
        self.container.stop(timeout=int(timeout))

    def stop(self) -> None:
        self.resume_process()  # a paused container is thawed first: then killed
        ContainerPart.stop(self)

    def _launch(self, initial: bool = True) -> None:
        if not initial and self.container is not None:  # `start router`: the same container,
            self.container.start()  # from what ProxySQL saved in its datadir
            return
        if self.container is not None:  # a first start that crashed (``_launch_retrying``):
            with contextlib.suppress(OSError):  # its log kept, its container and name gone
                self.save_log().replace(self.log.with_suffix(".crashed-start.log"))
            with contextlib.suppress(Exception):
                self.container.remove(force=True)
            self.container = None
        engines.testcontainers_env()
        from runners.containers.transfer import new_container

        tc = new_container(
            self.image, docker_client_kw=self.engine.client_kw,
            name=f"lab-{self.run.id}-{NAME}", network=self.network, network_aliases=[NAME],
            init=True, hostname=NAME, labels=engines.run_labels(self.run.id, self.run.dir),
            **engines.limits(),
            entrypoint=["proxysql"],
        )
        # no --initial: the datadir is new in a new container (the cnf is read), and a
        # container started again after `kill router` reads what was saved there
        tc.with_command(["-f", "-c", CONFIG_PATH, "-D", DATADIR])
        tc.with_copy_into_container(self.config_text().encode(), CONFIG_PATH)
        for port in (self.admin_port, self.writer_port, self.reader_port):
            tc.ports[f"{port}/tcp"] = (self.engine.address, port)  # type: ignore[assignment]
        self.container = engines.start_container(tc, "proxysql (container)", self.engine.url)

    def _alive(self) -> bool:
        return self.running()

    def save_log(self) -> Path:
        """The container's output and ProxySQL's own log (its ``errorlog`` in the container's
        data directory), in the run directory."""
        import io
        import tarfile

        with contextlib.suppress(Exception):
            text = self.container.logs(stdout=True, stderr=True)
            stream, _ = self.container.get_archive(f"{DATADIR}/proxysql.log")
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                member = tar.next()
                got = tar.extractfile(member) if member is not None else None
                if got is not None:
                    text += got.read()
            self.log.write_bytes(text)
        return self.log
