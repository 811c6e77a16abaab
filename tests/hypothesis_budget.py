"""How many examples a costly property test draws: a quarter of them in CI.

CI runs the property tests on fixed examples (the derandomized "ci" profile, tests/conftest.py), so
the same examples are drawn on every run, and a quarter of them still fail on any regression that breaks
most of the space. A developer's run draws new examples each time, at the full count: that is where
new failures are found. Cutting the costliest tests keeps CI's whole run well under its 10 minutes.
"""

from __future__ import annotations

import os

CI = os.environ.get("CTXVIZ_HYPOTHESIS") == "ci"


def examples(n: int) -> int:
    """`n` examples in a developer's run, a quarter of them (at least one) in CI."""
    return max(1, n // 4) if CI else n
