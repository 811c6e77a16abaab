"""AutoGen (autogen-core and autogen-ext 0.7.5): how ctxviz does it.

- `messages.py`: how AutoGen sees a session (LLMMessages) and how autogen-ext's
  OpenAIChatCompletionClient.count_tokens counts it.
- `buffered.py`, `head_and_tail.py`, `token_limited.py`: the three model contexts
  (`autogen-buffered`, `autogen-head-and-tail`, `autogen-token-limited`; TokenLimited's
  step-by-step `plan_records` is the reference of its plan in columns).
- `columns.py`: the model context as columns, kept per session, and a plan from one decision per
  LLMMessage (what TokenLimited's `plan` builds).
- `replay.py`: the incremental replayers of the three.

Tests: tests/test_policy_autogen.py against goldens recorded from AutoGen itself
(tests/golden/autogen) and tests/test_autogen_columns.py; replays in tests/test_replay_trims.py.
"""
