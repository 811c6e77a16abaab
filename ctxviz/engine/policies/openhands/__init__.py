"""OpenHands (openhands-sdk 1.58.0): how ctxviz does it.

- `view.py`: the session as the SDK's events, and the View's properties.
- `log.py`: the event log as `View.from_events` reads it back.
- `condenser.py`: the LLMSummarizingCondenser (`openhands-llm-summarizing`); `plan_records` step by step.
- `columns.py`: the same decided in columns (what `plan` runs), each log's View kept per session.
- `replay.py`: its incremental replayer.

Tests: tests/test_policy_openhands.py against goldens recorded from the SDK itself
(tests/golden/openhands) and tests/test_openhands_columns.py; replays in tests/test_replay_summaries.py.
"""
