"""The words ctxviz uses, defined once: the README's glossary and the app's hover help read this.

A term a user meets on screen (a column header, a legend entry, a card) has one definition, in the
user's words, here; tests hold the README's glossary to it, word for word.
"""

from __future__ import annotations

#: term -> its definition (one or two sentences, plain text).
GLOSSARY: dict[str, str] = {
    "anchor": "A fact a later turn may need, found in a message: the user's request or instruction, a file path, an id, "
              "an error, a value. Retention asks which anchors still reach the model; a lost anchor is one that no "
              "longer does, in any form.",
    "fresh tail": "The newest messages a policy always sends, whatever the budget (missy's fresh_tail_count, "
                  "keep_last_messages, min_messages...). They are protected from eviction.",
    "evictable prefix": "The messages older than the fresh tail: the policy fills what the budget leaves with them, "
                        "newest first, and drops (or summarises) the rest.",
    "cut": "Where the evictable prefix stops being sent: the newest message that did not fit, and everything older.",
    "zone": "Where a message sits in the policy's layout: system (folded into the system prompt), fresh tail, "
            "evictable, summarised, trimmed... The table's zone column and the strip's dashed lines show it.",
    "caps": "Budgets per category (system, context, dialog, tool output) that are each a ceiling rather than a share: "
            "they may add up to more than the whole budget, so a part can be full while the total is not.",
    "unseen": "The system prompt and tool definitions a log does not record (or the part of them it leaves out), estimated from the first call's reported "
              "input minus what the log shows (in an excerpt that starts mid-conversation and compacts, from the first call "
              "after the compaction, since the first also held the conversation before the file). Shown apart from the "
              "policy's own figures (Claude Code's, which start from the provider's usage, hold it), and counted in the real count.",
    "summarised": "Not sent as it was: a summary sent in its place covers it (the framework's own summary where the log "
                  "records one, ctxviz's offline stand-in in a replay).",
    "replaced": "Sent, but with part of it swapped for a placeholder: an image for '[image]', a cleared tool result for "
                "'[cleared]'. The message keeps its place; its tokens shrink.",
    "truncated": "Sent, but cut short to fit: the tokens sent are fewer than the message's own.",
    "step": "One model call: the request the agent sent before an assistant reply. A replay steps once per call (the "
            "log's own calls where it records them); --per-message steps at every message instead.",
}


def define(term: str) -> str:
    """The definition of `term` (case-insensitive, `summarized` as `summarised`), or ""."""
    key = term.strip().lower().replace("summarized", "summarised")
    return GLOSSARY.get(key, "")


def readme_section() -> str:
    """The README's glossary, made from GLOSSARY (a test keeps the two the same)."""
    lines = ["## Glossary", ""]
    for term, text in GLOSSARY.items():
        lines.append(f"- **{term}**: {text}")
    return "\n".join(lines) + "\n"
