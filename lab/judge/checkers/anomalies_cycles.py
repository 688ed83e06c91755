"""The cycle search of the ``anomalies`` checker (``lab.judge.checkers.anomalies``): in a
strongly connected component of a list_append workload's dependency graph (edges ``WW``, ``WR``,
``RW``, ``RT`` as bit masks), a short cycle of each of Elle's classes (G0, G1c, G-single,
G2-item, G-nonadjacent, and their ``-realtime`` variants), each search bounded by
``SEARCH_BUDGET`` node visits, and each cycle classified by its edges."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# networkx (0.1 s to import) is imported in the functions that build graphs: a `lab` process
# that checks no transactions never pays for it
from lab.judge.checkers.consistency_models import implied_anomalies

SEARCH_BUDGET = 500_000  # node visits one cycle search may spend in one component

WW, WR, RW, RT = 1, 2, 4, 8
DATA = WW | WR | RW
_REL = {WW: "ww", WR: "wr", RW: "rw", RT: "realtime"}


@dataclass
class _Budget:
    left: int = SEARCH_BUDGET
    ran_out: bool = False

    def spend(self, n: int) -> bool:
        """False (and ``ran_out``) once the budget is spent."""
        self.left -= n
        if self.left < 0:
            self.ran_out = True
            return False
        return True


# a cycle: nodes n0 .. n(k-1) and the relation of each edge n(i) -> n(i+1 mod k)
Cycle = tuple[list[int], list[int]]


def _pick(mask: int) -> int:
    """The relation shown for an edge of several: the weakest claim first."""
    for r in (WW, WR, RT, RW):
        if mask & r:
            return r
    raise ValueError(mask)


_PROJECTIONS: dict[tuple[int, int], tuple[dict[tuple[int, int], int], Any]] = {}


def _project(edges: dict[tuple[int, int], int], allowed: int) -> Any:
    """The graph of the edges of ``allowed`` relations (the last few are kept: the searches
    of one component share them; callers never modify them)."""
    import networkx as nx
    hit = _PROJECTIONS.get((id(edges), allowed))
    if hit is not None and hit[0] is edges:
        return hit[1]
    g = nx.DiGraph()
    g.add_edges_from(e for e, m in edges.items() if m & allowed)
    if len(_PROJECTIONS) > 8:
        _PROJECTIONS.clear()
    _PROJECTIONS[(id(edges), allowed)] = (edges, g)
    return g


def _path_cycle(edges: dict[tuple[int, int], int], first: tuple[int, int], first_rel: int,
                path: list[int], allowed: int) -> Cycle:  # fmt: skip
    """The cycle first[0] -> first[1] = path[0] ... path[-1] = first[0]."""
    nodes = [first[0], *path[:-1]]
    pairs = zip(path, path[1:], strict=False)
    rels = [first_rel] + [_pick(edges[(a, b)] & allowed) for a, b in pairs]
    return nodes, rels


def _cycle_in(edges: dict[tuple[int, int], int], allowed: int, required: int,
              budget: _Budget) -> Cycle | None:  # fmt: skip
    """A short cycle of ``allowed`` edges through an edge of ``required``: an edge lies on a cycle
    exactly when both its ends are in one strongly connected component."""
    import networkx as nx
    g = _project(edges, allowed)
    if not budget.spend(g.number_of_nodes() + 1):
        return None
    comps = sorted((c for c in nx.strongly_connected_components(g) if len(c) > 1), key=len)
    for comp in comps:
        for u in comp:
            for v in g.successors(u):
                m = edges[(u, v)]
                if v in comp and m & required:
                    path = nx.shortest_path(g, v, u)
                    return _path_cycle(edges, (u, v), _pick(m & required), path, allowed)
    return None


def _one_rw_cycle(edges: dict[tuple[int, int], int], nodes: Iterable[int], allowed: int,
                  budget: _Budget) -> Cycle | None:  # fmt: skip
    """A cycle of exactly one rw edge, the others of ``allowed`` (no rw): an rw edge u -> v with
    a path v ~> u in the graph of ``allowed`` edges (reachability over its condensation)."""
    import networkx as nx
    h = _project(edges, allowed).copy()
    h.add_nodes_from(nodes)
    rws = [e for e, m in edges.items() if m & RW]
    if not rws or not budget.spend(h.number_of_nodes() + 1):
        return None
    cond = nx.condensation(h)
    comp = cond.graph["mapping"]
    by_target: dict[int, list[tuple[int, int]]] = {}
    for u, v in rws:
        if comp[u] == comp[v]:
            return _path_cycle(edges, (u, v), RW, nx.shortest_path(h, v, u), allowed)
        by_target.setdefault(comp[v], []).append((u, v))
    for cv, group in by_target.items():
        reach = nx.descendants(cond, cv)
        if not budget.spend(len(reach) + 1):
            return None
        for u, v in group:
            if comp[u] in reach:
                return _path_cycle(edges, (u, v), RW, nx.shortest_path(h, v, u), allowed)
    return None


def _multi_rw_cycle(edges: dict[tuple[int, int], int], allowed: int,
                    budget: _Budget) -> Cycle | None:  # fmt: skip
    """A simple cycle of two or more rw edges (the others of ``allowed``): for an rw edge u -> v,
    a shortest path from v back to u that takes another rw edge, searched in a two-layer graph
    (layer 1: no rw taken yet after u -> v; layer 2: at least one)."""
    import networkx as nx
    layered = nx.DiGraph()
    rws = []
    for (u, v), m in edges.items():
        plain = m & allowed & ~RW
        if plain:
            r = _pick(plain)
            layered.add_edge((u, 1), (v, 1), r=r)
            layered.add_edge((u, 2), (v, 2), r=r)
        if m & RW:
            rws.append((u, v))
            layered.add_edge((u, 1), (v, 2), r=RW)
            if not plain:
                layered.add_edge((u, 2), (v, 2), r=RW)
    size = layered.number_of_nodes() + 1
    for u, v in rws:
        if (v, 1) not in layered or (u, 2) not in layered:
            continue
        if not budget.spend(size):
            return None
        try:
            path = nx.shortest_path(layered, (v, 1), (u, 2))
        except nx.NetworkXNoPath:
            continue
        base = [n for n, _ in path]
        if len(set(base)) != len(base) or u in base[:-1]:
            continue  # not a simple cycle: two cycles through one transaction
        rels = [RW] + [layered.edges[a, b]["r"] for a, b in zip(path, path[1:], strict=False)]
        return [u, *base[:-1]], rels
    return None


def _classify(rels: Sequence[int]) -> str:
    """Elle's cycle explainer: by data edges, then ``-realtime`` when a realtime edge is in."""
    n_rw = sum(1 for r in rels if r == RW)
    if n_rw == 1:
        t = "G-single"
    elif n_rw > 1:
        adjacent = any(rels[i] == RW and rels[i - 1] == RW for i in range(len(rels)))
        t = "G2-item" if adjacent else "G-nonadjacent"
    elif WR in rels:
        t = "G1c"
    else:
        t = "G0"
    return t + "-realtime" if RT in rels else t


def _contract(cycle: Cycle) -> Cycle:
    """Time points (negative ids) out: txn -> points ... -> txn becomes one realtime edge."""
    nodes, rels = cycle
    k = len(nodes)
    start = next(i for i, n in enumerate(nodes) if n >= 0)
    out_n: list[int] = []
    out_r: list[int] = []
    for j in range(k):
        i = (start + j) % k
        if nodes[i] >= 0:
            out_n.append(nodes[i])
            out_r.append(rels[i])
    return out_n, out_r


@dataclass
class _Found:
    """The cycles found in one component: Elle type -> the shortest."""

    cycles: dict[str, Cycle] = field(default_factory=dict)

    def add(self, cycle: Cycle | None) -> None:
        if cycle is None:
            return
        c = _contract(cycle)
        t = _classify(c[1])
        old = self.cycles.get(t)
        if old is None or len(c[0]) < len(old[0]):
            self.cycles[t] = c


def _data_cycles(edges: dict[tuple[int, int], int], nodes: set[int]) -> tuple[_Found, bool]:
    """Elle's cycle classes in one component of the data graph; (found, search complete)."""
    import networkx as nx
    found = _Found()
    budget = _Budget()
    g0 = _cycle_in(edges, WW, WW, budget)
    found.add(g0)
    b0 = _Budget()
    if g0 is None:
        found.add(_cycle_in(edges, WW | WR, WR, b0))
    found.add(_one_rw_cycle(edges, nodes, WW | WR, b1 := _Budget()))
    found.add(_multi_rw_cycle(edges, DATA, b2 := _Budget()))
    complete = not (budget.ran_out or b0.ran_out or b1.ran_out or b2.ran_out)
    if not found.cycles:  # a component always has a cycle: any one, classified by its edges
        g = _project(edges, DATA)
        cyc = nx.find_cycle(g)
        found.add(([a for a, _ in cyc], [_pick(edges[(a, b)]) for a, b in cyc]))
    return found, complete


def _realtime_cycles(edges: dict[tuple[int, int], int], nodes: set[int],
                     data_types: set[str]) -> tuple[_Found, bool]:  # fmt: skip
    """The ``-realtime`` variants a component of the full graph still holds, each searched only
    when no cycle found already implies it (Elle: a G-single implies a G-single-realtime)."""
    found = _Found()
    budgets: list[_Budget] = []

    def implied() -> set[str]:
        return implied_anomalies(data_types | set(found.cycles))

    if "G0-realtime" not in implied():
        found.add(_cycle_in(edges, WW | RT, RT, b := _Budget()))
        budgets.append(b)
    if "G1c-realtime" not in implied():
        found.add(_cycle_in(edges, WW | WR | RT, RT, b := _Budget()))
        budgets.append(b)
    if "G-single-realtime" not in implied():
        found.add(_one_rw_cycle(edges, nodes, WW | WR | RT, b := _Budget()))
        budgets.append(b)
    if not implied() & {"G2-item-realtime", "G-nonadjacent-realtime"}:
        found.add(_multi_rw_cycle(edges, DATA | RT, b := _Budget()))
        budgets.append(b)
    return found, not any(b.ran_out for b in budgets)
