"""The Kubernetes section of the scale-out docs is kept honest:

* every ```exp block in it passes ``lab check``, and its worked example is the catalogue's own
  experiment (the same plan), so the custom resource beside it describes what the lab runs;
* every topology kind, server flavor, replication mode, topology and router statement, router
  kind, action and network link of the grammar, and every metric, has a row in its tables: a
  construct added to the language fails here until the section says how it maps (or that it
  does not);
* its YAML blocks are whole objects of the kinds the section cites, in plain YAML (no tabs,
  two-space indentation). PyYAML is not a dependency of the project, so the blocks are not
  parsed here.

The section is found wherever it lives: ``docs/scale-out-kubernetes.md`` or, once merged,
``docs/scale-out.md``, from its heading to the next level-2 heading.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from dsl.api import check_text, format_errors, load_plan, plan_text
from dsl.metrics import METRICS
from dsl.parser import get_parser

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## On Kubernetes with the Percona Operators"
CANDIDATES = (ROOT / "docs" / "scale-out-kubernetes.md", ROOT / "docs" / "scale-out.md")
WORKED_EXAMPLE = ROOT / "experiments" / "galera-writer-kill.exp"

# the kinds the YAML blocks may be, with their API group/version
KINDS = {
    "PerconaXtraDBCluster": "pxc.percona.com/v1",
    "PerconaServerMySQL": "ps.percona.com/v1",
    "PerconaServerMongoDB": "psmdb.percona.com/v1",
    **{kind: "chaos-mesh.org/v1alpha1" for kind in (
        "PodChaos", "NetworkChaos", "IOChaos", "StressChaos", "TimeChaos", "Workflow",
        "Schedule")},
}


@cache
def section() -> str:
    for path in CANDIDATES:
        if path.exists():
            text = path.read_text(encoding="utf-8")
            if HEADING in text:
                body = text.split(HEADING, 1)[1]
                return HEADING + body.split("\n## ", 1)[0]
    raise AssertionError(f"no '{HEADING}' in {[p.name for p in CANDIDATES]}")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section(), re.S)


def tables() -> list[list[str]]:
    """Each markdown table of the section as its lines."""
    out: list[list[str]] = []
    current: list[str] = []
    for line in section().splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            out.append(current)
            current = []
    return out


def first_cells(title_word: str) -> list[str]:
    """The first cells of the body rows of the one table whose header's first cell has
    ``title_word``."""
    found = [t for t in tables() if title_word in t[0].split("|")[1].lower()]
    assert len(found) == 1, f"expected one table titled with '{title_word}', found {len(found)}"
    return [row.split("|")[1] for row in found[0][2:]]


# --- the grammar's constructs -------------------------------------------------------------


def _keyword(symbol: object) -> str | None:
    """The keyword a grammar symbol stands for, or None when it is not a keyword."""
    terms = {t.name: t.pattern for t in get_parser().terminals}
    pattern = terms.get(getattr(symbol, "name", ""))
    if pattern is not None and pattern.type == "str" and pattern.value.replace("_", "").isalpha():
        return str(pattern.value)
    return None


def _phrases(rule: str) -> set[str]:
    """The keywords each expansion of a rule starts with, as phrases: ``net_latency`` ->
    ``network latency``, ``writers`` -> ``writer`` and ``writers``."""
    out = set()
    for r in get_parser().rules:
        if r.origin.name != rule:
            continue
        words = []
        for symbol in r.expansion:
            word = _keyword(symbol)
            if word is None:
                break
            words.append(word)
        if words:
            out.add(" ".join(words))
    return out


def _children(rule: str) -> list[str]:
    """The rules a grouping rule (``_action``, ``_topology_stmt``) chooses between."""
    return [r.expansion[0].name for r in get_parser().rules
            if r.origin.name == rule and len(r.expansion) == 1]


def constructs(*, choices: tuple[str, ...], groups: tuple[str, ...]) -> dict[str, set[str]]:
    """Construct -> the phrases that name it. Each alternative of a choice rule
    (``topology_kind``: ``galera``...) is a construct; each rule a group chooses between
    (``_action``: ``kill``, ``net_latency``...) is one, named by any of its phrases."""
    out: dict[str, set[str]] = {}
    for rule in choices:
        for phrase in _phrases(rule):
            out[f"{rule}: {phrase}"] = {phrase}
    for group in groups:
        for child in _children(group):
            out[child] = _phrases(child)
    return out


TOPOLOGY = constructs(choices=("topology_kind", "flavor", "mode"), groups=("_topology_stmt",))
ROUTER = constructs(choices=("router_kind",), groups=("_router_stmt",))
FAULTS = constructs(choices=("link_kind",), groups=("_action",))
ALL_PHRASES = set().union(*TOPOLOGY.values(), *ROUTER.values(), *FAULTS.values())


def named(cells: list[str]) -> set[str]:
    """The phrases the code spans of these cells name. The longest phrase wins, so
    `stop replication NODE` names ``stop replication`` and not ``stop``."""
    longest_first = sorted(ALL_PHRASES | set(METRICS), key=lambda p: -len(p.split()))
    found: set[str] = set()
    for cell in cells:
        for span in re.findall(r"`([^`]+)`", cell):
            words = re.split(r"[\s,()]+", span)
            for phrase in longest_first:
                n = len(phrase.split())
                i = 0
                while i + n <= len(words):
                    if words[i:i + n] == phrase.split():
                        found.add(phrase)
                        words[i:i + n] = ["\0"]
                    i += 1
    return found


def without_places(value: Any) -> Any:
    """A plan without where it came from (``source``, and every ``span``, ``subject_span``...:
    the doc leaves the file's comments out, so its lines differ)."""
    if isinstance(value, dict):
        return {k: without_places(v) for k, v in value.items()
                if k != "source" and not k.endswith("span")}
    if isinstance(value, list):
        return [without_places(v) for v in value]
    return value


# --- the tests -----------------------------------------------------------------------------


def test_the_section_reads_as_a_section_of_a_larger_page() -> None:
    text = section()
    assert text.startswith(HEADING)
    assert not re.search(r"^# ", text, re.M), "a level-1 heading inside the section"
    assert blocks("exp") and blocks("yaml") and len(tables()) >= 4


def test_the_grammar_constructs_are_found() -> None:
    """The coverage checks below are not vacuous (and follow the grammar's names)."""
    assert {"topology_kind: galera", "flavor: mariadb", "mode: file_position",
            "semi_sync", "delay"} <= set(TOPOLOGY)
    assert ROUTER["check"] == {"check every"} and ROUTER["writers"] == {"writer", "writers"}
    assert FAULTS["net_latency"] == {"network latency"} and FAULTS["cold_restart"] == {
        "cold restart"}
    assert "link_kind: group" in FAULTS and len(FAULTS) >= 30


def test_the_longest_phrase_wins() -> None:
    assert named(["`stop replication NODE io_only`"]) == {"stop replication"}
    assert named(["`replication gtid`"]) == {"replication", "gtid"}
    assert named(["`wait until NODE synced`", "`kill router.writer`"]) == {"wait until", "kill"}


@pytest.mark.parametrize("table,wanted", [
    ("topology", TOPOLOGY), ("router", ROUTER), ("action", FAULTS)])
def test_every_construct_of_the_grammar_has_a_row(table: str, wanted: dict[str, set[str]]
                                                   ) -> None:
    present = named(first_cells(table))
    missing = sorted(c for c, phrases in wanted.items() if not phrases & present)
    assert not missing, (
        f"the '{table}' table of the Kubernetes section has no row for {missing}: say what "
        "each maps to on Kubernetes, or that it has no mapping")


def test_every_metric_has_a_row() -> None:
    present = named(first_cells("measurement"))
    missing = sorted(set(METRICS) - present)
    assert not missing, f"the measurements table has no row for {missing}"


@pytest.mark.parametrize("body", blocks("exp"), ids=lambda b: b.split('"')[1])
def test_every_exp_block_passes_lab_check(body: str) -> None:
    errors = check_text(body, "example.exp")
    assert errors == [], format_errors(errors, {"example.exp": body})


def test_the_worked_example_is_the_catalogue_experiment() -> None:
    """The custom resource and the Workflow beside it describe what the catalogue's file
    runs: same topology, router, workloads, timeline and expectations (comments aside)."""
    found = re.search(r'experiment "([^"]+)"', WORKED_EXAMPLE.read_text())
    assert found is not None
    name = found.group(1)
    body = next(b for b in blocks("exp") if f'experiment "{name}"' in b)
    doc = without_places(plan_text(body, "doc.exp").model_dump(mode="json"))
    catalogue = without_places(load_plan(WORKED_EXAMPLE).model_dump(mode="json"))
    assert doc == catalogue, f"the worked example no longer matches {WORKED_EXAMPLE.name}"


@pytest.mark.parametrize("body", blocks("yaml"),
                         ids=lambda b: (re.findall(r"^kind: (\w+)", b, re.M) or ["?"])[0])
def test_every_yaml_block_is_a_whole_object_of_a_cited_kind(body: str) -> None:
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert "\t" not in body
    assert all((len(ln) - len(ln.lstrip(" "))) % 2 == 0 for ln in lines), "odd indentation"
    top = [ln.split(":", 1)[0] for ln in lines if not ln.startswith(" ")]
    assert top[:2] == ["apiVersion", "kind"] and set(top) <= {
        "apiVersion", "kind", "metadata", "spec"}, top
    api = lines[0].split(":", 1)[1].strip()
    kind = lines[1].split(":", 1)[1].strip()
    assert KINDS.get(kind) == api, f"{kind} is not {api}"
