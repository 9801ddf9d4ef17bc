"""``python -m runners.compare``: see ``runners.compare.command``."""

import sys

from runners import require_extra

require_extra("compare", __name__)  # before matplotlib's import: a missing extra is one line, not a traceback
from runners.compare.command import cli  # noqa: E402

sys.exit(cli())
