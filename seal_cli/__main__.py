"""``python -m seal_cli`` is ``seal``."""

import sys

from seal_cli.main import main

sys.exit(main())
