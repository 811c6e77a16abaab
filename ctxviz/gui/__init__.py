"""The desktop app: PySide6 views over the engine's plans. Imported only by `ctxviz gui`/`report`."""
