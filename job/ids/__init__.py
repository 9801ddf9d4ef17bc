"""The ids a table holds, as 64-bit hashes: the hash itself, and the index of a table's ids in segments."""
