"""Strands Agents (strands-agents 1.62.0): how ctxviz does it.

- `messages.py`: how Strands holds a conversation (Bedrock-style messages) and estimates its tokens.
- `sliding_window.py`: the SlidingWindowConversationManager (`strands-sliding-window`).
- `window_manager.py`: its arguments and the agent's life under it, call by call (`_Manager`), which
  `sliding_window.py` plans from and `replay.py` carries.
- `summarizing.py`: the SummarizingConversationManager (`strands-summarizing`).
- `replay.py`: the incremental replayers of both, which hold the agent's messages unrendered
  (`messages.Unrendered`: a replay reads their kinds, and renders only the blocks it cuts).

Tests: tests/test_policy_strands.py against goldens recorded from Strands itself
(tests/golden/strands); replays in tests/test_replay_trims.py and test_replay_summaries.py; the
unrendered messages against the rendered ones in tests/test_strands_shapes.py.
"""
