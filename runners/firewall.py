"""iptables rules named for the run: what a Galera group partition inserts (``fault.network``)
and what removes them when the lab could not (``lab gc`` after a ``kill -9``, a teardown).

Every rule the lab inserts carries a comment naming the run and the node
(``-m comment --comment rcl-<run id>-<node>``, ``label``), so that the rules of a dead run,
and only those, can be found in ``iptables -S`` and deleted (``remove_run_rules``). Without
root or without iptables there is nothing to find.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

PREFIX = "rcl-"


def label(run_id: str, node: str) -> list[str]:
    """The match that names a rule for the run and node."""
    return ["-m", "comment", "--comment", f"{PREFIX}{run_id}-{node}"]


def run_rules(run_id: str, listing: str) -> list[list[str]]:
    """The rules of one run in ``iptables -S`` output, as ``-D`` arguments (``-A INPUT ...`` ->
    ``["INPUT", ...]``). A node name has no ``-``: the run ``abc`` does not claim the rules of
    its cell ``abc-2``."""
    prefix = f"{PREFIX}{run_id}-"
    out: list[list[str]] = []
    for line in listing.splitlines():
        try:
            args = shlex.split(line)
        except ValueError:
            continue
        if len(args) < 2 or args[0] != "-A":
            continue
        comments = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--comment"]
        if any(c.startswith(prefix) and c[len(prefix):] and "-" not in c[len(prefix):]
               for c in comments):
            out.append(args[1:])
    return out


def remove_run_rules(run_id: str) -> list[list[str]]:
    """Delete every iptables rule of a run (teardown, ``lab gc``); returns those deleted."""
    if os.geteuid() != 0 or shutil.which("iptables") is None:
        return []
    try:
        listing = subprocess.run(["iptables", "-S"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    done: list[list[str]] = []
    for rule in run_rules(run_id, listing):
        out = subprocess.run(["iptables", "-D", *rule], capture_output=True, timeout=30)
        if out.returncode == 0:
            done.append(rule)
    return done
