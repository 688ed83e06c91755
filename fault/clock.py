"""Clock skew: ``clock skew NODE by +30s`` / ``clock heal NODE``. The node's server runs with
libfaketime preloaded since the topology started it (``runners.faketime``); the fault writes
its offset file, heal writes ``+0`` (on ``backend containers`` the file is in the node's
container and the server there runs under the image's libfaketime).

The detail records what the skew did, read right after it: the server's ``NOW(6)`` and
``UNIX_TIMESTAMP(NOW(6))`` against the lab host's clock (``now_minus_host_seconds``). The
file is re-read at every clock read, so the next read shows it.

Heal state: the nodes whose clock is off.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import cast

from dsl.models import ClockSkew
from fault.context import ActionFailed, Context, Detail, Handler, Needs
from runners import faketime
from runners.capabilities import Clock, ClockInNode, Need
from runners.errors import ComponentError


@dataclass
class ClockState:
    skewed: set[str] = field(default_factory=set)


def node_minus_host(ctx: Context, name: str) -> float | None:
    """The server's ``NOW(6)`` minus the host's clock, seconds (None: the server does not
    answer)."""
    try:
        before = time.time()
        value = float(ctx.node(name).scalar("SELECT UNIX_TIMESTAMP(NOW(6))", timeout=2))
        after = time.time()
    except Exception:  # noqa: BLE001
        return None
    return round(value - (before + after) / 2, 3)


def write_offset(ctx: Context, name: str, seconds: float) -> str:
    """The node's offset file: in the run directory, or in the node's container (a back-end
    with ``ClockInNode``: ``backend containers``)."""
    if ctx.has(ClockInNode):
        try:
            return cast(ClockInNode, ctx.topo).write_clock_offset(name, seconds)
        except ValueError as e:
            raise ActionFailed(str(e)) from None
        except ComponentError as e:  # e.g. a paused container takes no exec
            raise ActionFailed(e.message) from None
    path = faketime.offset_file(ctx.topo.run.dir, name)
    if not path.exists():
        raise ActionFailed(f"{name}'s server does not run under libfaketime: the topology "
                           f"preloads it when the experiment has `clock skew {name} by ...`")
    return faketime.write_offset(path, seconds)


def clock_skew(ctx: Context, a: ClockSkew) -> Detail:
    name = a.node.name
    seconds = a.offset if a.verb == "skew" else 0.0
    text = write_offset(ctx, name, seconds)
    st = ctx.state(ClockState)
    if seconds:
        st.skewed.add(name)
    else:
        st.skewed.discard(name)
    return {"offset": text, "offset_seconds": seconds,
            "now_minus_host_seconds": node_minus_host(ctx, name)}


def heal(ctx: Context) -> list[str]:
    """Set every skewed clock back to the host's."""
    done: list[str] = []
    st = ctx.state(ClockState)
    for name in sorted(st.skewed):
        with contextlib.suppress(Exception):
            write_offset(ctx, name, 0.0)
            done.append(f"clock heal {name}")
    st.skewed.clear()
    return done


HANDLERS: dict[type, Handler] = {ClockSkew: clock_skew}
NEEDS: dict[type, Needs] = {ClockSkew: lambda a, _: [Need(Clock, f"clock {a.verb}")]}
