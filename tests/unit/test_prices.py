"""Prices for dollars per million images: explicit per engine, or an instance from the table."""

from __future__ import annotations

import json

import pytest

from job.errors import JobError
from job.costs.prices import DEFAULT_TABLE, Price, dollars_per_million_images, engine_prices

ENGINES = ["ray", "spark", "sagemaker", "local"]


def test_instance_prices_every_engine_but_sagemaker_without_its_ml_entry():
    prices = engine_prices(ENGINES, None, "g5.xlarge")
    with open(DEFAULT_TABLE) as f:
        listed = json.load(f)["usd_per_hour"]["g5.xlarge"]
    assert {e: p.usd_per_hour for e, p in prices.items()} == {"ray": listed, "spark": listed, "local": listed}
    assert "us-east-1" in prices["ray"].source


def test_explicit_price_wins_over_the_table():
    prices = engine_prices(ENGINES, "sagemaker=1.5,ray=2", "g5.xlarge")
    assert prices["sagemaker"] == Price(1.5, "--price-per-hour") and prices["ray"].usd_per_hour == 2.0


def test_a_table_with_ml_entries_prices_sagemaker(tmp_path):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"label": "test", "usd_per_hour": {"g5.xlarge": 1.0, "ml.g5.xlarge": 1.4}}))
    assert engine_prices(["ray", "sagemaker"], None, "g5.xlarge", str(table))["sagemaker"].usd_per_hour == 1.4


@pytest.mark.parametrize(
    "option, instance, message",
    [
        ("ray=cheap", None, "expected ENGINE=USD such as ray=1.006, got 'ray=cheap'"),
        ("flink=1", None, "'flink' is not one of the engines compared"),
        ("ray=0", None, "ray must cost more than 0 per hour"),
        (None, "x9.huge", "--instance x9.huge: not in"),
    ],
)
def test_bad_prices_name_the_problem(option, instance, message):
    with pytest.raises(JobError, match=message.replace("(", r"\(")):
        engine_prices(ENGINES, option, instance)


def test_missing_table_names_the_fix(tmp_path):
    with pytest.raises(JobError, match="pass --prices FILE or --price-per-hour"):
        engine_prices(ENGINES, None, "g5.xlarge", str(tmp_path / "none.json"))


def test_dollars_per_million_images():
    assert dollars_per_million_images(Price(3.6, "x"), 1000.0) == 1.0  # 3.6 $/h at 1000 images/s: 3.6 M images per $3.6
    assert dollars_per_million_images(None, 1000.0) is None
