"""The table's ids, held unique across nights without reading old parts.

Every part's ids as 64-bit hashes, by input file, in segments with Bloom filters (``id_segment``,
``bloom``; read and extended by ``id_index``); the parts one run read, in one array (``hashes_by_file``);
and an incremental run's check of its new files' ids against the table's (``incremental``).
"""
