"""`checks.apply_pair_safety` on the categories replay, carried from turn to turn.

The manager sends each category but its oldest members, so what it sends is no run of the
history (missy's and mnesis' are: `replay_pairs._PairSafety.drops` reads the pairs that cross a
run's boundaries). Where every tool call id is on one call, the pairs form stars instead: an
assistant message and the tool messages that answer its calls (a result answers one call), and
a lone problem (a call no result answers yet, a result without its call). apply_pair_safety's
closure then drops every sent member of a star that is broken, one with a member not sent or a
problem, and nothing of the others. A SYSTEM message is never dropped (the prompt is sent
whole): a star around one breaks only when a recorded summary covers it (it is not sent then, and
the results of its calls answer nothing), and one at its edge stays while the rest go.

So each star carries how many of its members the manager does not send and how many are
problems; a turn updates only the stars whose members changed: the message taken in, the pairs
it completes, the problems that end, and the members a category's cut passed over.
"""

from __future__ import annotations

from ...session import Category, Session
from ..replay_pairs import _PairSafety


class CarriedPairs:
    """What pair safety drops on top of the manager's cuts, by session index, with the drops'
    count and tokens in all and per category (positions in `categories`)."""

    def __init__(self, pairs: _PairSafety, session: Session, tokens: list[int], categories: list[Category]) -> None:
        messages = session.messages
        n = len(messages)
        self.until = pairs.until
        self.edges_at = pairs.edges_at
        self.position = pairs.position  # session index -> history position (the messages not of the system role)
        self.index = [m.index for m in messages if m.role != "system"]  # history position -> session index
        self.tool = [m.role == "tool" for m in messages]
        self.system = [m.category == Category.SYSTEM for m in messages]  # never dropped: apply_pair_safety spares the system zone
        number = {c: k for k, c in enumerate(categories)}
        self.category = [number[m.category] for m in messages]
        self.tokens = tokens
        self.center = list(range(n))  # each message's star, named by its centre (the assistant; a lone message is its own)
        self.members: dict[int, list[int]] = {}  # centre -> its star's members, for stars of more than one
        self.unsent = [False] * n  # the manager does not send it
        self.problem = [False] * n
        self.star_unsent = [0] * n  # per centre
        self.star_problems = [0] * n
        self.dropped = [False] * n  # pair safety drops it
        self.ends: dict[float, list[int]] = {}  # turn -> messages that stop being problems
        self.dirty: set[int] = set()  # centres whose stars changed since the last `settle`
        self.was: dict[int, bool] = {}  # messages changed since the last turn -> whether they were not sent then
        self.count = 0
        self.dropped_tokens = 0
        self.by_category = [0] * len(categories)
        self.tokens_by_category = [0] * len(categories)
        self.drops: set[int] = set()

    def grow(self, i: int) -> None:
        """Take message `i` in: whether it is a problem, the problems that end, the pairs it completes."""
        for k in self.ends.pop(i, ()):
            self._problem(k, False)
        limit = self.until.get(i)
        if limit is not None and i in self.position:  # (a system message's text joins the prompt: never a problem)
            self._problem(i, True)
            if limit != float("inf"):
                self.ends.setdefault(limit, []).append(i)
        for a, b in self.edges_at.get(i, ()):
            call, result = self.index[a], self.index[b]
            if self.tool[call]:
                call, result = result, call
            self._join(call, result)

    def _join(self, centre: int, result: int) -> None:
        """`result` answers a call of `centre`: its star (itself alone) joins centre's."""
        self.members.setdefault(centre, [centre]).append(result)
        self.center[result] = centre
        self.star_unsent[centre] += self.unsent[result]
        self.star_problems[centre] += self.problem[result]
        self.dirty.add(centre)

    def _problem(self, i: int, on: bool) -> None:
        if self.problem[i] != on:
            self.problem[i] = on
            self.star_problems[self.center[i]] += 1 if on else -1
            self.dirty.add(self.center[i])

    def _note(self, i: int) -> None:
        if i not in self.was:
            self.was[i] = self.unsent[i] or self.dropped[i]

    def set_unsent_all(self, indices: list[int], on: bool) -> None:
        """The manager's cut passed over these messages (on: they are no longer sent; off: sent again)."""
        unsent, center, star_unsent, dirty, was, dropped = self.unsent, self.center, self.star_unsent, self.dirty, self.was, self.dropped
        step = 1 if on else -1
        for i in indices:
            if unsent[i] != on:
                if i not in was:
                    was[i] = unsent[i] or dropped[i]
                unsent[i] = on
                c = center[i]
                star_unsent[c] += step
                dirty.add(c)

    def settle(self) -> None:
        """Bring the drops of every star that changed up to date."""
        for c in self.dirty:
            # A SYSTEM centre is never dropped, so its star breaks only when the centre itself is not
            # sent (a recorded summary covers it): then every call it makes is unanswered.
            broken = self.unsent[c] if self.system[c] else (self.star_unsent[c] > 0 or self.star_problems[c] > 0)
            for k in self.members.get(c, (c,)):
                want = broken and not self.unsent[k] and not self.system[k]
                if want != self.dropped[k]:
                    self._note(k)
                    self.dropped[k] = want
                    sign = 1 if want else -1
                    self.count += sign
                    self.dropped_tokens += sign * self.tokens[k]
                    self.by_category[self.category[k]] += sign
                    self.tokens_by_category[self.category[k]] += sign * self.tokens[k]
                    if want:
                        self.drops.add(k)
                    else:
                        self.drops.discard(k)
        self.dirty.clear()

    def newly_not_sent(self) -> list[int]:
        """The messages not sent now (cut or dropped) that were sent at the last turn; and forget the changes."""
        if not self.was:
            return []
        unsent, dropped = self.unsent, self.dropped
        new = [k for k, was in self.was.items() if not was and (unsent[k] or dropped[k])]
        self.was.clear()
        return new
