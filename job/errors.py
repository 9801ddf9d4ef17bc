"""The error a user can fix before any work runs; the commands print it as one line and exit 2."""


class JobError(RuntimeError):
    """A problem the user can fix before any work runs; printed as one line."""
