"""The pytest plugin's public name, the one users pass (``-p lab.pytest_plugin``,
``-p no:lab.pytest_plugin``, ``pytest_plugins = ["lab.pytest_plugin"]``) and the ``pytest11``
entry point registers (docs/pytest.md). The plugin is ``lab.pytest.plugin``, loaded from here;
with ``lab.pytest.explore`` (exploration and search as items) and ``lab.pytest.fixture`` (the
``lab_topology`` fixture) beside it."""

pytest_plugins = ["lab.pytest.plugin"]
