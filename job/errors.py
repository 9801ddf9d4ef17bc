"""The errors a user can fix, which the commands print as one line (``job.cli.run_main``).

- ``JobError``: found before any work (a bad option, dataset or prefix); exit 2.
- ``DataError``: the input's data stopped the run part-way (a damaged file, a null or repeated
  id that only the run could see); exit 3. Parts committed before it are kept for ``--resume``.
"""


class JobError(RuntimeError):
    """A problem the user can fix before any work runs; printed as one line."""


class DataError(RuntimeError):
    """The input's data stopped the run after work began; one line naming the file and the fix.

    Deterministic: running the same input again meets it again, so engines must not retry it
    (``job.output.parts.FAILED`` carries it to where the rows are gathered instead of raising in a worker).
    """
