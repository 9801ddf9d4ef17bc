"""Spark's internals: the session, and what executors run."""
