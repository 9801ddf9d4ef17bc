"""``python -m runners.compare``: see ``runners.compare.command``."""

import sys

from runners.compare.command import cli

sys.exit(cli())
