"""Penguin's ContextWindowManager, the category budgets (the seeds' page 002, policies.md section 3):
how ctxviz does it. The policy is named `categories`.

- `context_window.py`: the per-category budgets and trim order (`categories`), and the usage
  tables the manager prints; `plan_records` is its steps one message at a time.
- `context_window_columns.py`: the same plan decided in columns, on what the manager holds kept per session.
- `content.py`: the categories, trim orders, content count and placeholders both share.
- `replay.py`: its incremental replayer; `pair_safety.py`: pair safety on its cuts, carried turn to turn.

Tests: tests/test_categories.py, tests/test_categories_columns.py (columns = records); replays in
tests/test_replay_incremental.py, with pair safety in tests/test_replay_pair_safe_seeds.py.
"""
