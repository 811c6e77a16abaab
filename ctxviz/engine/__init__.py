"""The headless engine: session model, token counting, policies and plans. Never imports Qt."""

from .counting import CountingScheme, CountStore, TokenCounts, count_session
from .plan import Decision, MessagePlan, Plan, Totals
from .planner import plan_session
from .policies import get_policy, policy_names
from .session import Category, Message, Session
from .tokenizers import get_tokenizer, tokenizer_names

__all__ = [
    "Category", "CountStore", "CountingScheme", "Decision", "Message", "MessagePlan", "Plan", "Session",
    "TokenCounts", "Totals", "count_session", "get_policy", "get_tokenizer", "plan_session", "policy_names",
    "tokenizer_names",
]
