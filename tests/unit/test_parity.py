"""Parity's decision per row: the label, or that it errored, and the row's lineage (its input file, its model)."""

from __future__ import annotations

from runners.compare.parity import Outcome, check_parity


def test_a_row_from_another_input_file_or_model_is_a_mismatch_and_its_run_is_not_compared():
    same = Outcome(3, None, None, lineage=("a.parquet", "resnet50 sha256:0123456789abcdef"))
    moved = Outcome(3, None, None, lineage=("b.parquet", "resnet50 sha256:0123456789abcdef"))
    other_model = Outcome(3, None, None, lineage=("a.parquet", "resnet50 sha256:fedcba9876543210"))
    assert check_parity({"ray": {"x": same}, "spark": {"x": same}}).ok
    assert check_parity({"ray": {"x": same}, "spark": {"x": moved}}).mismatches == 1
    assert check_parity({"ray": {"x": same}, "local": {"x": other_model}}).mismatches == 1
