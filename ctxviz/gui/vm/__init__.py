"""The view-model's parts (`gui/viewmodel.py` puts them together in `ContextViewModel`).

`viewmodel.py` keeps the inputs and the work it starts on worker threads; each part here is a
mixin that holds one concern: the parameters and their history, the plan's results (and the real
count and retention that follow it), the replay and its answers, Compare.
"""
