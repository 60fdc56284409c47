"""``python -m longctx``: the ``longctx`` command, as ``python -m longctx.cli``
(:func:`longctx.cli.main`)."""

import sys

from longctx.cli import main

sys.exit(main())
