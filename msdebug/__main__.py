"""``python -m msdebug`` is the ``msdebug`` command."""

import sys

from .cli import main

sys.exit(main())
