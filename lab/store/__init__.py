"""The results database: runs, cells, operations, samples, measurements and expectations in
one SQLite file (``db``), and where that file lives and whether it can be written
(``location``). Schema: docs/results.md."""
