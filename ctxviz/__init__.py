"""ctxviz: see and tune how agent frameworks fit a conversation into a model's context window."""

__version__ = "0.1.0"
