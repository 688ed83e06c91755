"""What ``lab doctor`` says about the container back-end: the engine and the node image.

With ``DOCKER_HOST`` (or ``LAB_DOCKER_HOST``) the engine is asked through its API; otherwise
the local podman is asked through its command (no service is started to look).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass

from runners.containers import engine as engines
from runners.containers import image as images


@dataclass
class BackendStatus:
    engine: str  # "podman 4.3.1 (private service per run)" / "Docker 27.1 at tcp://..."
    socket: str  # where the lab talks to it
    image: images.ImageStatus
    ok: bool  # the engine answers
    problem: str = ""


NOT_EXERCISED = ("images from a registry: MariaDB images (official mariadb, `image`), "
                 "proxysql/proxysql (router proxysql) and percona/percona-server-mongodb or "
                 "mongo (topology mongodb_replset) are supported, not exercised here; MySQL "
                 "and Percona Server images are not supported on containers yet")


def survey() -> BackendStatus:
    tag = images.image_tag()
    url = engines.configured_host()
    if url is not None:
        try:
            client = engines.docker_client(url, timeout=10)
            eng = engines.Engine(url, client, local=engines.is_local_url(url))
            return BackendStatus(eng.version(), url, images.status(client, tag), True)
        except Exception as e:  # noqa: BLE001 - any failure: the engine does not answer
            return BackendStatus("unknown", url, images.ImageStatus(tag, False), False,
                                 f"does not answer: {str(e)[:200]}")
    podman = shutil.which("podman")
    sock = "a private podman service per run (<run dir>/podman.sock)"
    if podman is None:
        return BackendStatus("podman missing", sock, images.ImageStatus(tag, False), False,
                             "install podman and runc, or set DOCKER_HOST")
    env = engines.podman_env(engines.write_containers_conf())
    out = subprocess.run([podman, "version", "--format", "{{.Client.Version}}"],
                         capture_output=True, text=True, env=env, timeout=30)
    version = f"podman {out.stdout.strip() or '?'}"
    img = images.ImageStatus(tag, False)
    for name in (tag, f"docker.io/library/{tag}"):
        got = subprocess.run([podman, "image", "inspect", name], capture_output=True,
                             text=True, env=env, timeout=30)
        if got.returncode == 0:
            doc = json.loads(got.stdout)[0]
            img = images.ImageStatus(tag, True, int(doc.get("Size") or 0) or None,
                                     doc.get("Created"))
            break
    return BackendStatus(version, sock, img, out.returncode == 0,
                         "" if out.returncode == 0 else out.stderr.strip()[:200])


def lines(s: BackendStatus) -> list[str]:
    """``lab doctor``'s lines about the container back-end."""
    engine = f"container engine: {s.engine} — {s.socket}"
    if s.problem:
        engine += f" ({s.problem})"
    if s.image.present:
        size = f"{s.image.size / 1e6:.0f} MB" if s.image.size else "size unknown"
        img = f"node image: {s.image.tag} present ({size})"
    else:
        img = (f"node image: {s.image.tag} not built yet (`lab image build`, or the first "
               "`backend containers` run builds it)")
    return [engine, img, NOT_EXERCISED]
