"""Makes the modules named in HIDE_MODULES (comma-separated) unimportable in a child Python.

A test puts this directory on the child's PYTHONPATH to run a command as a user without some
pip extra would: ``sys.modules[name] = None`` is how the import system says "not installed"
(``import name`` raises ModuleNotFoundError, ``importlib.util.find_spec(name)`` is None).
"""

import os
import sys

for _name in filter(None, os.environ.get("HIDE_MODULES", "").split(",")):
    sys.modules[_name] = None
