"""JobConfig validation and the shared parser: bad options stop with one line naming the fix."""

from __future__ import annotations

import re

import pytest

from job.cli import config_from_args, config_to_argv, get_args_parser
from job.config import JobConfig
from job.errors import JobError


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"limit": 0}, "--limit must be positive, got 0"),
        ({"batch_size": -1}, "--batch-size must be positive"),
        ({"precision": "int8"}, "--precision must be one of fp32, fp16, bf16"),
        ({"topk": 0}, "--topk must be between 1 and 1000"),
        ({"raw_shape": (256, 256, 4)}, "--raw-shape must be H,W,C with C 1 or 3"),
        ({"output": "s3://b/in/"}, ("--output s3://b/in/ lies in --input s3://b/in: the next run (--resume, --overwrite) "
                                    "would read this job's parts as input")),
        ({"output": "s3://b/in/preds/"}, "--output s3://b/in/preds/ lies in --input s3://b/in"),
        ({"output": "s3://b/"}, ("--input s3://b/in lies in --output s3://b/: the job would write its parts among its "
                                 "input files; choose an --output outside --input")),
        ({"image_column": ""}, "--image-column must not be empty"),
        ({"arch": "resnet51"}, "--arch must be one of resnet50, resnet18"),
        ({"embeddings": "yes"}, "--embeddings must be one of off, with, only, got 'yes'"),
        ({"embedding_dtype": "float64"}, "--embedding-dtype must be one of float16, float32"),
        ({"table_format": "hudi"}, "--table-format must be one of parquet, delta, iceberg, got 'hudi'"),
        ({"table_format": "delta", "embedding_dtype": "float16"}, ("--embedding-dtype float16 with --table-format delta: "
                                                                   "the format has no float16 type")),
        ({"table_format": "iceberg", "time_travel_days": -1}, "--time-travel-days must be 0 or more, got -1"),
        ({"iceberg_catalog": "hive"}, "--iceberg-catalog must be one of embedded, glue, got 'hive'"),
        ({"iceberg_table": "db.t"}, "--iceberg-table db.t names a table in a catalog; the embedded catalog needs no name"),
        ({"iceberg_catalog": "glue", "iceberg_table": "db.t"}, ("--iceberg-catalog glue is the catalog of an Iceberg table, "
                                                                "and --table-format is parquet: add --table-format iceberg")),
        ({"table_format": "iceberg", "iceberg_catalog": "glue"}, "--iceberg-catalog glue needs --iceberg-table DATABASE.TABLE"),
        ({"table_format": "iceberg", "iceberg_catalog": "glue", "iceberg_table": "Nightly.Preds"},
         "--iceberg-table must be DATABASE.TABLE of lower-case letters, digits and _ (the names Athena reads), got 'Nightly.Preds'"),
        ({"table_format": "iceberg", "iceberg_catalog": "glue", "iceberg_table": "db.t", "output": "/tmp/out"},
         "--iceberg-catalog glue: a Glue table's files lie on S3, and --output /tmp/out is not an s3:// prefix"),
        ({"crop": 0}, "--crop: the recipe's crop must be a positive whole number of pixels, got 0"),
        ({"resize": 200, "crop": 224}, "--resize/--crop: the recipe needs crop <= resize"),
        ({"mean": (124.0, 116.0, 104.0)}, "--mean: the recipe's mean must be in [0, 1] per channel, got (124.0, 116.0, 104.0); "
                                          "divide by 255"),
        ({"std": (0.2, 0.0, 0.2)}, "--std: the recipe's std must be in (0, 1] per channel"),
        ({"labels": "s3://key:secret@bucket/names.txt"}, "--labels s3://***@bucket/names.txt: credentials in a URL are refused"),
    ],
)
def test_bad_values_name_the_option(changes, message):
    with pytest.raises(JobError, match=re.escape(message)):
        JobConfig(**{"input": "s3://b/in", "output": "s3://b/out", **changes})


def test_output_and_input_apart_by_folder_in_one_store(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data")
    for output in (f"{tmp_path}/link/preds", f"file://{tmp_path}/data/preds/", f"{tmp_path}/data"):
        with pytest.raises(JobError, match="lies in --input"):
            JobConfig(input=f"{tmp_path}/data/", output=output)
    for output in (f"{tmp_path}/data-preds", f"s3://b{tmp_path}/data/preds"):  # a sibling folder; another store
        assert JobConfig(input=f"{tmp_path}/data", output=output).output == output
    assert JobConfig(input="s3://b/in", output="s3://b/in-preds").output == "s3://b/in-preds"


def test_uris_are_spelt_one_way_before_anything_compares_or_records_them():
    config = JobConfig(input="S3A://b/in/", output="S3://b/out", weights="s3n://b/w.pt", labels="S3://b/names.txt")
    assert (config.input, config.output, config.weights, config.labels) == ("s3://b/in/", "s3://b/out", "s3://b/w.pt",
                                                                            "s3://b/names.txt")
    assert config.to_dict()["output"] == "s3://b/out" and JobConfig(input="x", output="y", weights="imagenet").weights == "imagenet"
    with pytest.raises(JobError, match=re.escape("--output s3://b/in/preds lies in --input s3://b/in")):
        JobConfig(input="s3a://b/in", output="S3://b/in/preds")


def test_weights_default_to_imagenet_for_real_input_and_random_for_the_sample():
    parser = get_args_parser()
    assert config_from_args(parser.parse_args(["--input", "x", "--output", "y"])).weights == "imagenet"
    assert config_from_args(parser.parse_args([])).weights == "random"
    assert config_from_args(parser.parse_args(["--weights", "imagenet"])).weights == "imagenet"


def test_raw_shape_option_parses_and_rejects_garbage(capsys):
    parser = get_args_parser(prog="job")
    assert parser.parse_args(["--raw-shape", "256,256,3"]).raw_shape == (256, 256, 3)
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["--raw-shape", "big"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected H,W,C" in err


def test_unknown_option_is_one_line(capsys):
    with pytest.raises(SystemExit):
        get_args_parser(prog="job").parse_args(["--frobnicate"])
    err = capsys.readouterr().err
    assert err == "job: error: unrecognized arguments: --frobnicate (see --help)\n"


def test_config_is_frozen_and_recorded_whole():
    config = JobConfig(input="a", output="b")
    with pytest.raises(AttributeError):
        config.limit = 3  # type: ignore[misc]
    assert config.to_dict()["weights"] == "imagenet" and set(config.to_dict()) >= {"input", "output", "batch_size"}


@pytest.mark.parametrize(
    "config",
    [
        JobConfig(input="s3://b/in", output="/tmp/out", weights="random"),
        JobConfig(input="in", output="out", weights="/w.pt", s3_endpoint_url="http://127.0.0.1:9000", image_column="img",
                  id_column="key", raw_shape=(256, 256, 3), limit=7, batch_size=8, precision="bf16", topk=3,
                  max_pixels=1000, overwrite=True, skip_id_check=True),
        JobConfig(input="in", output="out", weights="/w.pt", arch="convnext_tiny", labels="s3://b/names.json", resize=256,
                  crop=224, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25), embeddings="only", embedding_dtype="float32"),
        JobConfig(input="in", output="s3://b/out", table_format="iceberg", iceberg_catalog="glue", iceberg_table="db.preds"),
    ],
)
def test_config_to_argv_parses_back_to_the_same_config(config):
    assert config_from_args(get_args_parser().parse_args(config_to_argv(config))) == config


def test_skip_id_check_is_off_unless_asked_for():
    parser = get_args_parser()
    assert not config_from_args(parser.parse_args(["--input", "x", "--output", "y"])).skip_id_check
    assert config_from_args(parser.parse_args(["--input", "x", "--output", "y", "--skip-id-check"])).skip_id_check


def test_model_options_parse_as_a_user_types_them(capsys):
    parser = get_args_parser(prog="job")
    config = config_from_args(parser.parse_args(["--embeddings", "--crop", "384", "--resize", "438", "--std", "0.5,0.5,0.5"]))
    assert (config.embeddings, config.embedding_dtype, config.arch, config.topk) == ("with", "float32", "resnet50", None)
    assert config.recipe_overrides() == {"resize": 438, "crop": 384, "std": (0.5, 0.5, 0.5)}
    assert config_from_args(parser.parse_args(["--embeddings", "only"])).embeddings == "only"
    assert config_from_args(parser.parse_args([])).embeddings == "off"
    for argv, words in ((["--mean", "0.5,0.5"], "argument --mean: expected three numbers R,G,B"),
                        (["--crop", "0"], "argument --crop: must be an integer >= 1, got 0"),
                        (["--arch", "resnet51"], "argument --arch: invalid choice: 'resnet51'")):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err
