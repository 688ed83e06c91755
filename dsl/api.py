"""The language's entry points; the CLI and the runtime use only these.

* ``load_experiment(path)`` / ``parse_text(text)`` -> a valid ``Experiment``
* ``load_plan(path)`` / ``plan_text(text)`` -> its ``Plan``; ``load_both(path)`` -> both
* ``check_file(path)`` / ``check_text(text)`` -> every error (never raises for bad input)
* ``format_errors(errors)`` -> the errors as ``path:line:col: error: ...`` blocks

Bad input of any kind raises ``LanguageErrors`` (from the loaders) or is returned as a list
of ``LanguageError`` (from the checkers): syntax errors when the text does not parse,
otherwise every error found while building and validating it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from dsl.compile import compile_experiment
from dsl.errors import LanguageError, LanguageErrors, file_error, sorted_errors
from dsl.errors import format_errors as _format_errors
from dsl.models import Experiment, Span
from dsl.parser import parse_experiment
from dsl.plan import Plan
from dsl.validate import validate

MAX_FILE_BYTES = 1_000_000


def _read(path: str | Path) -> str:
    """The text of a file; ``LanguageErrors`` when it cannot be read as UTF-8 text."""
    name = str(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise LanguageErrors([file_error(name, "is a directory, not an .exp file")])
        if p.stat().st_size > MAX_FILE_BYTES:
            raise LanguageErrors([file_error(name, f"is larger than {MAX_FILE_BYTES} bytes")])
        data = p.read_bytes()
    except FileNotFoundError:
        raise LanguageErrors([file_error(name, "no such file")]) from None
    except OSError as exc:
        raise LanguageErrors([file_error(name, f"cannot read: {exc.strerror or exc}")]) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LanguageErrors(
            [file_error(name, f"is not UTF-8 text (byte {exc.start})", "save the file as UTF-8")]
        ) from None


def parse_text(text: str, path: str = "<string>") -> Experiment:
    """Parse, build and validate; raise ``LanguageErrors`` with every error found."""
    if "\x00" in text:
        pos = text.index("\x00")
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise LanguageErrors(
            [
                LanguageError(
                    path,
                    Span(line=line, column=column, end_line=line, end_column=column + 1),
                    "the file contains a NUL character",
                    "is it a text file?",
                )
            ],
            source=text,
        )
    try:
        experiment, errors = parse_experiment(text, path)
    except LanguageErrors as exc:
        if exc.rest is None:
            raise
        raise LanguageErrors(exc.errors + errors_of_the_rest(exc.rest, text, path),
                             source=text) from None
    if experiment is not None:
        errors = without_cascades(errors + validate(experiment, path), text)
    if not errors and experiment is not None and experiment.faults is not None:
        from dsl.space import probe_errors  # each fault of the space drawn on each node

        errors = probe_errors(text, experiment, path)
    if errors or experiment is None:
        raise LanguageErrors(errors or [file_error(path, "not an experiment")], source=text)
    return experiment


def without_cascades(errors: list[LanguageError], text: str) -> list[LanguageError]:
    """Leave out "'vary n' is not used" when the file does say ``$n`` where the language
    refused it (``rate $n``, ``check every $n``: that error is reported, and is the one to
    fix)."""
    code = re.sub(r'"[^"\n]*"|#[^\n]*', "", text)  # the language, not comments or strings
    body = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("vary"))
    out = []
    for e in errors:
        m = re.match(r"'vary (\w+)' is not used", e.message)
        if m and re.search(rf"\${m.group(1)}\b", body):
            continue
        out.append(e)
    return out


def _block_end(lines: list[str], first: int) -> int:
    """The line (1-based) that closes the block opened on line ``first``."""
    depth, opened = 0, False
    for i in range(first - 1, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        opened = opened or depth > 0
        if opened and depth <= 0:
            return i + 1
    return len(lines)


def errors_of_the_rest(rest: str, text: str, path: str) -> list[LanguageError]:
    """The other errors of a file with syntax errors: those of the text with the statements
    in error blanked out (``rest``), but any that may only follow from a statement blanked
    out: one about the whole experiment (a setting it lacks, where the blanked line may have
    given it) and one naming something a blanked line names (``unknown workload 'w'`` when
    the line declaring ``w`` was blanked)."""
    try:
        experiment, errors = parse_experiment(rest, path)
    except LanguageErrors:
        return []
    if experiment is not None:
        errors = without_cascades(errors + validate(experiment, path), text)
    old, new = text.split("\n"), rest.split("\n")
    blanked = " ".join(a for a, b in zip(old, new, strict=False) if a != b)
    blanked_lines = [i + 1 for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b]
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.-]*", blanked))
    header = next((i + 1 for i, line in enumerate(new) if line.strip()), 1)
    # without its own `duration` line the rest runs for the default: an action "after the
    # end of the load" may only be after that default (the blanked line may have been it)
    no_duration = re.search(r"^\s*duration\s", rest, re.MULTILINE) is None
    # a name the rest declares (a node, a workload) was not the blanked line's to declare:
    # an error naming it stands (``'db1' is the primary`` when a workload's line naming db1 was
    # blanked)
    declared: set[str] = set()
    if experiment is not None:
        from dsl.validate_base import topology_nodes

        declared = {n.name for n in topology_nodes(experiment)} | {
            w.name for w in experiment.workloads}
    out: list[LanguageError] = []
    for e in errors:
        # the names an error quotes, and their parts ('router.writer': router, writer)
        named = {w for q in re.findall(r"'([^']+)'", e.message)
                 for w in (q, *re.findall(r"[A-Za-z_][A-Za-z0-9_-]*", q))}
        after_default = no_duration and ("end of the load" in e.message
                                         or re.search(r"\(duration \d", e.message))
        if e.span.line <= header or (named & words) - declared or after_default:
            continue
        # a fault space left empty by its own blanked lines
        if e.message.endswith("names no fault") and any(
                e.span.line < n <= _block_end(old, e.span.line) for n in blanked_lines):
            continue
        out.append(e)
    return out


def plan_text(text: str, path: str = "<string>") -> Plan:
    return compile_experiment(parse_text(text, path), validated=True)


def check_text(text: str, path: str = "<string>") -> list[LanguageError]:
    """Every error of a text (empty when it is a valid experiment)."""
    try:
        parse_text(text, path)
    except LanguageErrors as exc:
        return exc.errors
    return []


def load_experiment(path: str | Path) -> Experiment:
    return parse_text(_read(path), str(path))


def load_plan(path: str | Path) -> Plan:
    return load_both(path)[1]


def load_both(path: str | Path) -> tuple[Experiment, Plan]:
    """A file's experiment and its plan, the file read, parsed and validated once (``lab
    run``); raises ``LanguageErrors`` with every error, as ``check_file`` lists them."""
    exp = load_experiment(path)
    return exp, compile_experiment(exp, validated=True)


def check_file(path: str | Path) -> list[LanguageError]:
    """Every error of a file, sorted by position; never raises for bad input."""
    try:
        text = _read(path)
    except LanguageErrors as exc:
        return exc.errors
    return check_text(text, str(path))


def backend_errors(path: str | Path, backend: str, experiment: Experiment | None = None
                   ) -> list[LanguageError]:
    """What the file cannot run on ``backend`` (``lab run --backend``: the file's own
    ``backend`` statement overridden), as ``lab check`` would say it. ``experiment``: the
    file's, already loaded (else it is loaded here)."""
    from dsl.backends import problems

    exp = (experiment or load_experiment(path)).model_copy(update={"backend": backend})
    return sorted_errors([LanguageError(str(path), span, message, hint)
                          for span, message, hint in problems(exp)])


def format_errors(errors: Iterable[LanguageError], sources: dict[str, str] | None = None) -> str:
    """The errors as compiler-style blocks, with source lines and carets. Sources not
    given are read from the files named by the errors (when they can be read)."""
    errors = sorted_errors(errors)
    texts: dict[str, str | None] = dict(sources or {})
    for err in errors:
        if err.path not in texts:
            try:
                texts[err.path] = _read(err.path)
            except LanguageErrors:
                texts[err.path] = None
    return _format_errors(errors, texts)
