"""The Context tab's markdown view: the export's own headings (each entry's source, named by
engine/sources.py `source_label`) with the lines between sent runs, so the view and an exported
file say the same. The scope line counts the entries by the same classes (`added_counts`)."""

from __future__ import annotations

from ...engine.plan import Plan
from ...engine.session import Session
from ...engine.sources import added_counts, span_text
from ...io.exporters import marked_markdown

__all__ = ["added_counts", "labelled_markdown", "span_text"]


def labelled_markdown(plan: Plan, session: Session) -> str:
    """The Context tab's markdown view, each entry headed with its real source."""
    return marked_markdown(plan, session)
