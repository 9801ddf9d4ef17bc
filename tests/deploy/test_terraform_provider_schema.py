"""terraform/'s Databricks resources against the provider's own schema, offline.

The provider's schema comes from its prebuilt CDK for Terraform bindings (``provider_schema``),
installed beside checkov (tests/deploy/requirements-checkov.txt): every argument and nested block
written must exist in the schema of a provider release that versions.tf allows, and every
required argument must be given. `terraform validate` checks the same where a provider mirror is.
"""

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import provider_schema
from deploy_helpers import CHECKOV_INSTALL

DATABRICKS_BINDINGS = "cdktf_cdktf_provider_databricks"


@pytest.fixture(scope="module")
def databricks() -> provider_schema.ProviderSchema:
    assembly = provider_schema.find_assembly(DATABRICKS_BINDINGS)
    if assembly is None:
        pytest.fail(f"the Databricks provider's schema is not installed; it comes with checkov's requirements: {CHECKOV_INSTALL}")
    return provider_schema.load(assembly)


def test_the_schema_is_of_a_provider_release_versions_tf_allows(databricks, tf):
    pinned = tf["terraform"][0]["required_providers"]["databricks"]["version"]  # "~> 1.70"
    allowed = SpecifierSet(pinned.replace("~>", "~=").replace(" ", ""))
    assert Version(databricks.version) in allowed, f"the bindings describe {databricks.version}; versions.tf pins {pinned}"


def test_every_databricks_resource_and_data_source_matches_the_providers_schema(databricks, tf):
    checked, problems = 0, []
    for kind, schemas in (("resource", databricks.resources), ("data", databricks.data_sources)):
        for tf_type, named in tf[kind].items():
            if not tf_type.startswith("databricks_"):
                continue
            assert tf_type in schemas, f"{kind} {tf_type}: the provider has no such type"
            for name, body in named.items():
                problems += schemas[tf_type].problems(body, f"{tf_type}.{name}")
                checked += 1
    assert not problems, "\n".join(problems)
    assert checked >= 9, f"only {checked} Databricks blocks were checked"  # it really looked at the configuration


def test_the_check_finds_a_misspelt_argument_a_missing_one_and_a_bad_dynamic_block(databricks, tf):
    location = dict(tf["resource"]["databricks_external_location"]["output"])
    location["readonly"] = location.pop("read_only")
    del location["url"]
    grants = {"schema": "main.s", "dynamic": [{"grant": {"for_each": "x", "content": {"principal": "p", "privilege": ["SELECT"]}}}]}
    found = (databricks.resources["databricks_external_location"].problems(location, "location")
             + databricks.resources["databricks_grants"].problems(grants, "grants"))
    assert found == ["location: the provider has no argument 'readonly'", "location: required argument 'url' missing",
                     "grants.dynamic.grant: the provider has no argument 'privilege'",
                     "grants.dynamic.grant: required argument 'privileges' missing"]
