"""`python -m ctxviz.cli`, as `ctxviz`."""

import sys

from . import main

sys.exit(main())
