"""When to compile: the rule, its break-even, and the persistent cache directory."""

from __future__ import annotations

import os

import pytest

from inference.compile import (
    COMPILE_BREAK_EVEN_IMAGES,
    COMPILE_SECONDS,
    COMPILED_IMAGES_PER_SEC,
    EAGER_IMAGES_PER_SEC,
    compile_by_size,
    use_persistent_cache,
)


def test_break_even_is_where_saved_time_repays_the_compile():
    saved = COMPILE_BREAK_EVEN_IMAGES * (1 / EAGER_IMAGES_PER_SEC - 1 / COMPILED_IMAGES_PER_SEC)
    assert saved == pytest.approx(COMPILE_SECONDS, rel=1e-4)
    assert 380_000 < COMPILE_BREAK_EVEN_IMAGES < 390_000


def test_by_size_long_gpu_jobs_compile_short_ones_and_cpu_jobs_do_not():
    assert compile_by_size(COMPILE_BREAK_EVEN_IMAGES, "cuda")
    assert not compile_by_size(COMPILE_BREAK_EVEN_IMAGES - 1, "cuda")
    assert not compile_by_size(10**9, "cpu")


def test_cache_dir_is_stable_and_a_users_choice_is_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    chosen = use_persistent_cache()
    assert chosen == tmp_path / ".cache/batch-inference/inductor" and chosen.is_dir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert use_persistent_cache() == tmp_path / "mine" and os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
