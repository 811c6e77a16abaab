"""The exit codes every command shares: 0 done, 1 over budget (or a rule broken, for CI gates), 2 a user error."""

from __future__ import annotations

EXIT_OK, EXIT_OVER_BUDGET, EXIT_USAGE = 0, 1, 2

