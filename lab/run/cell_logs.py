"""The servers' logs of a cell that did not pass, kept beside the results database.

A run's directory (data directories, sockets, logs) is removed when its cell ends. When the
cell did not pass (an expectation failed, it could not complete, or it was interrupted), the
logs are what a DBA reads next: each node's error log, the router's and toxiproxy's, copied to
``<results database's directory>/logs/<run id>/cell-<n>/`` before the directory goes. The cell's
notes say where. Nothing is kept for a cell that passed.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

MAX_BYTES = 8 * 1024**2  # the tail of a log longer than this (a crash loop's log can be huge)


def logs_dir(db_path: Path, run_id: str, cell: int) -> Path:
    return db_path.parent / "logs" / run_id / f"cell-{cell}"


def _sources(topo: Any) -> list[tuple[str, Path]]:
    """(name, path) of every log the topology's components write."""
    out: list[tuple[str, Path]] = []
    for node in getattr(topo, "nodes", {}).values():
        with contextlib.suppress(Exception):
            save = getattr(node, "save_log", None)  # a container's output, saved first
            if save is not None:
                save()
        path = getattr(node, "error_log", None)
        if path is not None:
            out.append((f"{node.name}.log", Path(path)))
    for part, name in ((getattr(topo, "router", None), "router.log"),
                       (getattr(topo, "toxi", None), "toxiproxy.log")):
        if part is None:
            continue
        with contextlib.suppress(Exception):
            save = getattr(part, "save_log", None)
            if save is not None:
                save()
        path = getattr(part, "log", None)
        if path is not None:
            out.append((name, Path(path)))
    return out


def keep_logs(topo: Any, dest: Path) -> list[Path]:
    """Copy the topology's logs to ``dest`` (each at most its last ``MAX_BYTES``). Returns the
    files written; a log that cannot be read is skipped."""
    written: list[Path] = []
    for name, src in _sources(topo):
        try:
            size = src.stat().st_size
            if not size:
                continue
            dest.mkdir(parents=True, exist_ok=True)
            target = dest / name
            if size <= MAX_BYTES:
                shutil.copyfile(src, target)
            else:
                with open(src, "rb") as f:
                    f.seek(size - MAX_BYTES)
                    target.write_bytes(f.read())
            written.append(target)
        except OSError:
            continue
    return written
