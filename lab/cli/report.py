"""`lab report RUN [--html FILE]`: a stored run again; with ``--html``, the HTML report
(``lab.report.html_report``): one self-contained file with its charts, that works offline.

``RUN`` is a run id or a unique prefix of one, as for ``lab show``; an ambiguous or unknown one
exits 2, a results database that cannot be read exits 3, a file that cannot be written exits 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lab.cli.run import cmd_show, read_run
from lab.exits import EXIT_OK, EXIT_USAGE


def cmd_report(ref: str, html: str | None = None, db: str | None = None) -> int:
    if html is None:
        return cmd_show(ref, db=db)
    from lab.report.data import load_report
    from lab.report.html_report import write_html

    report = read_run(db, ref, load_report)
    if isinstance(report, int):
        return report
    try:
        charts = write_html(report, Path(html))
    except OSError as e:
        print(f"Error: cannot write {html}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    cells = len(report.cells)
    print(f"wrote {html}: run {report.run_id}, {cells} cell{'s' if cells != 1 else ''}, "
          f"{len(charts)} charts (open it in a browser; it needs no network)")
    return EXIT_OK
