"""The language's entry points; the CLI and the runtime use only these.

* ``load_experiment(path)`` / ``parse_text(text)`` -> a valid ``Experiment``
* ``load_plan(path)`` / ``plan_text(text)`` -> its ``Plan``
* ``check_file(path)`` / ``check_text(text)`` -> every error (never raises for bad input)
* ``format_errors(errors)`` -> the errors as ``path:line:col: error: ...`` blocks

Bad input of any kind raises ``LanguageErrors`` (from the loaders) or is returned as a list
of ``LanguageError`` (from the checkers): syntax errors when the text does not parse,
otherwise every error found while building and validating it.
"""

from __future__ import annotations

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
    experiment, errors = parse_experiment(text, path)
    if experiment is not None:
        errors = errors + validate(experiment, path)
    if errors or experiment is None:
        raise LanguageErrors(errors or [file_error(path, "not an experiment")], source=text)
    return experiment


def plan_text(text: str, path: str = "<string>") -> Plan:
    return compile_experiment(parse_text(text, path))


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
    return compile_experiment(load_experiment(path))


def check_file(path: str | Path) -> list[LanguageError]:
    """Every error of a file, sorted by position; never raises for bad input."""
    try:
        text = _read(path)
    except LanguageErrors as exc:
        return exc.errors
    return check_text(text, str(path))


def backend_errors(path: str | Path, backend: str) -> list[LanguageError]:
    """What the file cannot run on ``backend`` (``lab run --backend``: the file's own
    ``backend`` statement overridden), as ``lab check`` would say it."""
    from dsl.backends import problems

    exp = load_experiment(path).model_copy(update={"backend": backend})
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
