"""What is written: output rows, the parts workers commit, the output prefix and its table, the final check."""
