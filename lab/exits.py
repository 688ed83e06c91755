"""The lab's exit statuses, in one place (README, docs/language.md, docs/results.md):

- 0: every expectation held (``lab check``: every file is valid);
- 1: an expectation failed;
- 2: the language or the command line was wrong (nothing ran);
- 3: the run is incomplete: a component failed, Ctrl-C, or the results database failed.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_EXPECTATION = 1
EXIT_LANGUAGE = 2
EXIT_USAGE = EXIT_LANGUAGE  # a wrong command line is answered like a wrong file
EXIT_INCOMPLETE = 3
