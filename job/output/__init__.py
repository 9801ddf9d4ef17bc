"""What workers write: the output rows of every engine, and the parts they commit one per input file."""
