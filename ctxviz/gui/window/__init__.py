"""The main window's parts, one module per tab or dock (`gui/main_window.py` puts them together).

Each part is a mixin of `MainWindow`: it builds its widgets (`_build_*`) and holds what they do.
The attributes a part uses from the others are declared at the top of its class.
"""
