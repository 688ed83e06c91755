"""The results database: runs, cells, operations, samples, measurements and expectations in
one SQLite file (``db``: the ``Store``, opened there; its reads in ``queries``, its writes in
``writing``), the schema and its migrations (``schema``), what rows hold and how values and
operations are encoded (``records``), its errors (``errors``), what a run could not write to it
(``fallback``), and where that file lives and whether it can be written (``location``).
Schema: docs/results.md."""
