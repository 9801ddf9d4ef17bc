"""Who may run: one run per output prefix at a time (a lease object beside the output) and the processes that hold it."""
