"""Judging a run: the checkers (``checkers``: pure functions of the history and the facts the
servers showed), the figures an ``expect`` line names (``figures_lookup``, ``figures_load``,
``figures_servers``), the expectations judged against them (``expectations``), the claims
across cells (``claims``) and how precisely a figure is known (``resolution``)."""
