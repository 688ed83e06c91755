"""Showing runs: the end-of-run tables (``measurements``) and the compact summary matrix
(``summary_matrix``) fitted to the terminal (``term_fit``); the HTML report (``html_report``,
``html_page``) over the numbers read from a stored run (``data``); ``lab compare`` (``compare``,
``compare_render``, with the repeats' statistics in ``stats``); and the figures of a cell that
was never checked (``unchecked``)."""
