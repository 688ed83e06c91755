"""Showing runs. One table says how each checker's figures are shown and in which order
(``metrics``); every presenter reads it: the end-of-run tables of ``lab show --all``
(``measurements``, with each checker's rows in ``rows``) and the compact summary — the faults
``timeline``, the matrix (``summary_matrix``) and its ``findings``, reading a cell's summary
through ``cell_fields`` — fitted to the terminal
(``term_fit``); the HTML report (``html_report``, ``html_page``) over the numbers read from a
stored run (``data``); ``lab compare`` (``compare``, ``compare_render``, with the repeats'
statistics in ``stats``); and the figures of a cell that was never checked (``unchecked``)."""
