"""The night, end to end: what the output holds, what a run does to it (one frozen plan), its commit and final check.

See ``job.night.plan`` for the decision, ``job.night.finish`` for the last step."""
