"""``python -m memledger ...`` is the command itself (the bundled binary)."""
import sys

from ._command import main

sys.exit(main())
