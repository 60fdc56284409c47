import sys

from longctx.cli import main

sys.exit(main())
