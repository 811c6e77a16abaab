import os

# Qt must know it has no screen before any QApplication exists (pytest-qt creates one lazily).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
