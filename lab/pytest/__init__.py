"""The pytest side of the lab (docs/pytest.md): ``.exp`` files as test items (``plugin``, loaded
through its public name ``lab.pytest_plugin``), exploration and search as items (``explore``),
the ``lab_topology`` fixture (``fixture``), and why a cell did not pass, as a failed item shows
it (``cell_failure``)."""
