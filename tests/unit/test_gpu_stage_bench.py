"""The GPU stage benchmark runs end to end on the CPU device (tiny sizes) and writes its rows."""

from __future__ import annotations

import json

from benchmarks import gpu_stage_bench


def test_smoke_run_writes_one_row_per_measurement_where_asked(tmp_path):
    rows = gpu_stage_bench.main(["--batch", "2", "--seconds", "0", "--no-compile", "--results", str(tmp_path / "gpu_stage.jsonl")])
    assert [r["what"] for r in rows] == ["model", "decode", "resize", "stage", "stage"]
    written = [json.loads(line) for line in (tmp_path / "gpu_stage.jsonl").read_text().splitlines()]
    assert len(written) == 5 and all(r["images_per_sec"] > 0 and "hardware" in r and "versions" in r for r in written)
    assert {r["decoder"] for r in written if r["what"] == "decode"} == {"cpu"}
