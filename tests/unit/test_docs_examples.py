"""Every example in every doc is checked by the real checker, so the docs and the language
cannot drift apart again:

* every ```exp block of docs/*.md and README.md is a complete experiment that passes
  ``lab check`` (docs/language.md's ``exp-invalid`` blocks are tested in
  test_language_docs.py);
* every inline `expect ...` / `report ...` in the docs, and every metric form in the first
  column of docs/results.md's expectation table, is wrapped into a minimal experiment that
  defines what it names (workloads of a fitting kind, nodes, variants) and must pass too,
  unless it is listed in ``SHOWN_AS_ERRORS`` with the error the doc says it gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsl.api import check_text, format_errors
from dsl.metrics import METRICS

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
TEXTS = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in DOCS}

# inline forms a doc shows as mistakes: the error each must give
SHOWN_AS_ERRORS = {
    "expect downtime(w) < 5M": "downtime needs a duration, but '5M' is a size",
}


def exp_blocks() -> list[tuple[str, str]]:
    out = []
    for name, text in TEXTS.items():
        for body in re.findall(r"```exp\n(.*?)```", text, re.S):
            out.append((name, body))
    return out


def inline_lines() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name, text in TEXTS.items():
        for span in re.findall(r"`((?:expect|report) [^`\n]+)`", text):
            if (name, span) not in out:
                out.append((name, span))
    return out


def table_rows() -> list[tuple[str, str]]:
    """(first column, second column) of docs/results.md's expectation table."""
    text = TEXTS["docs/results.md"]
    section = text.split("## Expectations", 1)[1].split("\n## ", 1)[0]
    return [(line.split("|")[1], line.split("|")[2]) for line in section.splitlines()
            if line.startswith("| `")]


def table_forms() -> list[str]:
    """The metric forms of docs/results.md's expectation table: every form of its first
    column, and the bare metric name where its subject column says the subject may be left
    out ("optional", "none: ...")."""
    forms: list[str] = []
    for first, subject in table_rows():
        shown = re.findall(r"`([^`]+)`", first)
        forms += shown
        if re.search(r"optional[^,]*workload|none:", subject):
            bare = shown[0].split("(", 1)[0]
            if bare not in forms:
                forms.append(bare)
    return forms


# --- the wrapper ---------------------------------------------------------------------------

KIND_PREFERENCE = ("read_your_writes", "unique_insert", "unique_writes", "probe", "list_append",
                   "read_modify_write", "bank")
METRIC_CALL = re.compile(r"\b([a-z_]+)(?:\(([^)]*)\))?")


def wrap(lines: list[str]) -> str:
    """A minimal valid experiment around expect/report lines: a replication topology with
    every node they name (the primary is ``p0``), a router, one workload per name of a kind
    every metric on it accepts, the variants they name, and a failover when one is measured."""
    nodes: list[str] = []
    kinds: dict[str, set[str]] = {}
    ons: dict[str, list[str]] = {}  # workload -> the nodes named after `on` (its endpoints too)
    variants: list[str] = re.findall(r"\bin ([A-Za-z_]\w*)", " ".join(lines))
    failover = False
    for line in lines:
        for name, args in METRIC_CALL.findall(line):
            spec = METRICS.get(name)
            if spec is None:
                continue
            failover = failover or name == "failover"
            if not args:
                continue
            subject, _, rest = args.partition(",")
            subject, _, on = subject.strip().partition(" on ")
            if on and on not in nodes:
                nodes.append(on.strip())
            if on and subject:
                ons.setdefault(subject.strip(), []).append(on.strip())
            if spec.subject == "node":
                if subject and subject not in nodes:
                    nodes.append(subject)
            elif subject:
                allowed = set(spec.workload_kinds or KIND_PREFERENCE)
                kinds[subject] = kinds.get(subject, set(KIND_PREFERENCE)) & allowed
    replicas = [n for n in nodes if n != "p0"] or ["n1"]
    out = ['experiment "doc-example" {', "  duration 1m",
           f"  topology replication {{ primary p0  replicas {', '.join(replicas)} }}",
           f"  router haproxy {{ writers p0, {replicas[0]}  readers {', '.join(replicas)} }}"]
    out += [f"  variant {v} {{ }}" for v in dict.fromkeys(variants)]
    for w, possible in kinds.items():
        kind = next(k for k in KIND_PREFERENCE if k in possible)
        extra = "".join(f", {n}" for n in dict.fromkeys(ons.get(w, [])))
        if kind == "read_your_writes":
            out.append(f"  workload {w}: {kind} {{ write router.writer  "
                       f"read router.reader{extra} }}")
        else:
            out.append(f"  workload {w}: {kind} {{ target router.writer{extra} }}")
    if not kinds:
        out.append("  workload w0: probe { target router.writer }")
    if failover:
        out += ["  at 10s kill p0", f"  at 12s promote {replicas[0]}"]
    out += [f"  {line}" for line in lines]
    out.append("}")
    return "\n".join(out) + "\n"


def _ids(pairs: list[tuple[str, str]]) -> list[str]:
    return [f"{name}:{body.strip().splitlines()[0][:50]}" for name, body in pairs]


# --- the tests -----------------------------------------------------------------------------


def test_the_examples_are_found() -> None:
    """The parametrized checks below are not vacuous."""
    assert exp_blocks() and inline_lines() and table_forms()
    assert "downtime(w)" in table_forms() and "lost_writes" in table_forms()


@pytest.mark.parametrize("doc,body", exp_blocks(), ids=_ids(exp_blocks()))
def test_every_exp_block_of_every_doc_passes_lab_check(doc: str, body: str) -> None:
    errors = check_text(body, "example.exp")
    assert errors == [], f"{doc}:\n" + format_errors(errors, {"example.exp": body})


@pytest.mark.parametrize("doc,line", inline_lines(), ids=_ids(inline_lines()))
def test_every_inline_expect_and_report_of_every_doc_is_checked(doc: str, line: str) -> None:
    text = wrap([line])
    errors = check_text(text, "example.exp")
    if line in SHOWN_AS_ERRORS:
        assert [e.message for e in errors] == [SHOWN_AS_ERRORS[line]]
        return
    assert errors == [], f"{doc}: `{line}`\n" + format_errors(errors, {"example.exp": text})


@pytest.mark.parametrize("form", table_forms())
def test_every_form_of_the_results_table_is_accepted_by_lab_check(form: str) -> None:
    text = wrap([f"report {form}"])
    errors = check_text(text, "example.exp")
    assert errors == [], f"docs/results.md shows `{form}`:\n" + format_errors(
        errors, {"example.exp": text}
    )


def test_the_wrapper_does_not_hide_mistakes() -> None:
    """A form the checker rejects stays rejected inside the wrapper (what the old table of
    docs/results.md showed)."""
    for form in ("downtime", "missing_transactions", "replication_lag(n).max last 10s x",
                 "stale_reads(on n)"):
        assert check_text(wrap([f"report {form}"]), "example.exp"), form


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_the_results_table_has_every_metric_and_statistic(metric: str) -> None:
    """docs/results.md's expectation table drifted from dsl.metrics once (no split_brain,
    errant_gtids, divergence; lost_writes without not_replicated): every statistic is there."""
    text = TEXTS["docs/results.md"]
    section = text.split("## Expectations", 1)[1].split("\n## ", 1)[0]
    row = next((line for line in section.splitlines()
                if line.startswith(f"| `{metric}`") or line.startswith(f"| `{metric}(")), None)
    assert row is not None, f"no row for {metric}"
    stats_col = row.split("|")[3]
    missing = [s for s in METRICS[metric].stats if f"`{s}`" not in stats_col]
    assert not missing, f"{metric}: {missing}"
