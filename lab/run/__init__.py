"""Running an experiment: the engine's lifecycle (``engine``: set-up, load and timeline, stop,
heal, settle, final state, check, store, teardown), the load of a cell (``load``, with its
``triggers``), the recorder every client writes to (``recorder``), the live view and stepped
runs (``live``, ``step``), what a run comes to (``outcome``), its JSON summary (``summary``)
and identity (``context``), and a cell's facts, logs and stored results (``cell_facts``,
``cell_logs``, ``cell_store``); ``cell_run`` runs the cells one at a time for the pytest
plugin; ``gc_guard`` keeps the garbage collector's scans of the history from stopping the
clients while a load is recorded."""
