import os

# Qt must know it has no screen before any QApplication exists (pytest-qt creates one lazily).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# The session listing keeps its cache in the user's cache folder (io/discovery.py): tests keep
# theirs in a folder of their own, never the user's.
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="ctxviz-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)


import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# CI runs the property tests on the same examples every time (`CTXVIZ_HYPOTHESIS=ci`, set by
# .ci/run): a red CI then names a failure anyone can rerun, never one a random draw happened on.
# A developer's run draws new examples each time, which is where new failures are found.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("CTXVIZ_HYPOTHESIS", "dev"))


@pytest.fixture(autouse=True)
def _forget_plugin_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy file a test loads (examples/sliding_window.py) is registered for that test only:
    other tests iterate every registered policy with their own parameter tables."""
    import ctxviz.engine.policies as registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_FILE_SPECS", dict(registry._FILE_SPECS))


@pytest.fixture
def open_window(qtbot, tmp_path):  # type: ignore[no-untyped-def]
    """`open_window(path)`: a shown main window with its own settings file, the session at `path`
    open and planned (None: no session); shut down after the test."""
    from PySide6.QtCore import QSettings

    from ctxviz.gui.main_window import MainWindow

    windows = []

    def make(path: str | None = None):  # type: ignore[no-untyped-def]
        win = MainWindow(settings=QSettings(str(tmp_path / f"settings{len(windows)}.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(win)
        win.show()
        windows.append(win)
        if path is not None:
            with qtbot.waitSignal(win.vm.planReady, timeout=30000):
                win.open_path(str(path))
        return win

    yield make
    for win in windows:
        win.vm.shutdown()
