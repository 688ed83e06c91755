"""Semantic checks of an experiment: every error in a file, sorted by position.

``validate(exp, path)`` checks what a parse cannot: names (unknown nodes and workloads, listing
the known ones; duplicates), roles that make no sense (promoting a Galera node, delaying the
primary, stopping replication on a primary, converting anything but a MongoDB replica set,
``wait until ... synced`` outside Galera), ``$param`` without ``vary``, expectations on unknown
workloads and with units of the wrong kind, timeline times beyond the duration, and the safety
of every config key and value (they are written into my.cnf files and must never reach a
shell; settings the lab owns are refused or confined, see ``dsl.owned``).

The validator is made of parts, one module each, each a subclass of the one before:
``dsl.validate_base`` (limits, nodes, did-you-mean, ``NameChecks``), ``dsl.validate_topology``,
``dsl.validate_workloads`` (and sweeps), ``dsl.validate_steps`` (steps, timeline, triggers,
actions: ``ACTION_CHECKS``) and ``dsl.validate_expectations``; the safety of names, keys and
values is ``dsl.validate_safety`` (``setting_problems``, also used by the builder, which knows
the exact tokens).
"""

from __future__ import annotations

from dsl.errors import LanguageError, sorted_errors
from dsl.models import Experiment
from dsl.validate_expectations import ExpectationChecks


class _Validator(ExpectationChecks):
    """All of validation: each part's checks, in order."""

    def run(self) -> list[LanguageError]:
        self.check_topology()
        self.check_router()
        self.check_configs()
        self.check_images()
        self.check_workloads()
        self.check_sweeps()
        self.check_steps()
        self.check_timeline()
        self.check_triggers()
        self.check_measurements()
        self.check_backend()
        return sorted_errors(self.errors)

    def check_backend(self) -> None:
        """What the file's back-end cannot run yet: its declared capabilities against what
        the fault families need (``dsl.backends``)."""
        from dsl.backends import problems

        for span, message, hint in problems(self.exp):
            self.error(span, message, hint)


def validate(exp: Experiment, path: str | None = None) -> list[LanguageError]:
    """Every semantic error of an experiment, sorted by position (empty: valid)."""
    from dsl.space import space_errors  # the fault space (lab explore)

    where = path or exp.source or "<string>"
    return sorted_errors(_Validator(exp, where).run() + space_errors(exp, where))
