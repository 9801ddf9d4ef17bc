"""Every command reads its path options with the scheme spelt once (``job.cli.uri_argument``): what the parser hands
on, the namespace an engine's own code reads as well as the config, already says ``s3://``."""

from __future__ import annotations

import pytest

from job.cli import uri_argument
from runners import ENGINES, make_dataset
from tests.common.extras import engine_or_skip, module_or_skip

SPELT = ["--input", "S3A://b/in/", "--output", "S3://b/out", "--weights", "s3N://b/w.pt", "--labels", "S3://b/names.txt"]


@pytest.mark.parametrize("written, read", [
    ("S3://Bucket/Key/A", "s3://Bucket/Key/A"),  # the scheme only: bucket and key keep their case
    ("s3A://b/x/", "s3://b/x/"),
    ("S3N://b/x", "s3://b/x"),
    ("FILE:///data/In", "file:///data/In"),
    ("data/S3://x", "data/S3://x"),  # a local path: no scheme to spell
    ("imagenet", "imagenet"),
])
def test_a_path_option_is_read_with_its_scheme_spelt_once(written, read):
    assert uri_argument(written) == read


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_engines_path_options_reach_the_namespace_as_s3(name):
    args = engine_or_skip(name).args_parser().parse_args(SPELT)
    assert (args.input, args.output, args.weights, args.labels) == ("s3://b/in/", "s3://b/out", "s3://b/w.pt",
                                                                     "s3://b/names.txt")


def test_the_sagemaker_jobs_own_s3_options_and_the_tools_path_options_are_read_as_s3():
    sagemaker = engine_or_skip("sagemaker").args_parser().parse_args(["--model-s3-uri", "S3://b/m.tar.gz",
                                                                       "--staging-s3-uri", "s3a://b/staging/"])
    assert (sagemaker.model_s3_uri, sagemaker.staging_s3_uri) == ("s3://b/m.tar.gz", "s3://b/staging/")
    compare = module_or_skip("runners.compare.command")
    assert compare.get_compare_args_parser().parse_args(["--input", "S3A://b/in"]).input == "s3://b/in"
    assert make_dataset.get_args_parser().parse_args(["--output", "S3://b/in"]).output == "s3://b/in"
