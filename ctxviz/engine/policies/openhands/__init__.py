"""OpenHands (openhands-sdk 1.58.0): how ctxviz does it.

- `view.py`: the session as the SDK's events, and the View's properties.
- `log.py`: the event log as `View.from_events` reads it back.
- `condenser.py`: the LLMSummarizingCondenser (`openhands-llm-summarizing`); `plan_records` step by step.
- `columns.py`: the same decided in columns (what `plan` runs), each log's View kept per session.
- `summary_input.py`: what its summariser is shown of the events a condensation forgets (their
  `str` previews, the previous summary's first 497 characters), which the offline summary reads.
- `replay.py`: its incremental replayer.

Tests: tests/test_policy_openhands.py against goldens recorded from the SDK itself
(tests/golden/openhands) and tests/test_openhands_columns.py, tests/test_openhands_summary_input.py (the SDK's own event previews); replays in tests/test_replay_summaries.py.
"""
