import os

# Qt must know it has no screen before any QApplication exists (pytest-qt creates one lazily).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _forget_plugin_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy file a test loads (examples/sliding_window.py) is registered for that test only:
    other tests iterate every registered policy with their own parameter tables."""
    import ctxviz.engine.policies as registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_FILE_SPECS", dict(registry._FILE_SPECS))
