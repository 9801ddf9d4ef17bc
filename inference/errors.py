"""The one error ``inference`` raises for weights, class names or a recipe that cannot be used.

Torch-free, so argument parsing and the driver can catch it without importing torch. Every
message is one line naming the value and the fix; callers print it as it is.
"""

from __future__ import annotations


class WeightsError(RuntimeError):
    """The requested weights, names or recipe cannot be used; the message names the value and the fix."""
