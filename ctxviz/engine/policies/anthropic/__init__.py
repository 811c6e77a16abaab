"""Anthropic API context editing (beta `context-management-2025-06-27`): how ctxviz does it.

- `context_editing.py`: the clear_tool_uses_20250919 and clear_thinking_20251015 edits
  (`anthropic-clear-tool-uses`, `anthropic-clear-thinking`), each request judged afresh; their
  step-by-step plans (`plan_clear_*_records`) are the reference.
- `columns.py`: both edits decided in columns (what `plan` runs): the session's part derived once.
- `blocks.py`: the blocks' counts, the prompt's input tokens, the tool uses and assistant turns.
- `replay.py`: the incremental replayers of both.

Tests: tests/test_policy_anthropic_editing.py, tests/test_anthropic_columns.py; replays in tests/test_replay_edits.py.
"""
