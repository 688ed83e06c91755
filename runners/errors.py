"""Runtime failures that name the component and show the tail of its log."""

from __future__ import annotations

from pathlib import Path


def log_tail(path: str | Path | None, lines: int = 15) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return f"(no log at {path})"
    all_lines = text.splitlines()
    tail = all_lines[-lines:]
    # Tools often end with boilerplate: bring the error lines that scrolled away into view.
    errors = [ln for ln in all_lines[:-lines] if "ERROR" in ln or "error:" in ln.lower()]
    if errors:
        tail = ["(error lines from earlier in the log:)", *errors[-5:], "(...)", *tail]
    return "\n".join(tail)


class ComponentError(RuntimeError):
    """A component (a node, the router, toxiproxy, dbdeployer) failed. str() has the log tail."""

    def __init__(self, component: str, message: str, log: str | Path | None = None) -> None:
        self.component = component
        self.message = message
        self.log = str(log) if log else None
        tail = log_tail(log) if log else ""
        text = f"{component}: {message}"
        if tail:
            text += f"\n--- last lines of {log} ---\n{tail}"
        super().__init__(text)
