"""IAM policy evaluation for the deployment checks: terraform's policy documents, resolved as a
default ``apply`` would make them, judged as AWS judges one request.

Use ``policy(tf, name)`` for the statements of ``data.aws_iam_policy_document.<name>`` and
``Policy.allows(action, resource, context)`` for a decision. The semantics are IAM's for what
our policies use: an explicit Deny wins over any Allow, nothing is allowed unless a statement
allows it; ``Action``/``NotAction`` match case-insensitively and ``Resource``/``NotResource``
case-sensitively, with ``*`` (any run of characters, ``/`` included) and ``?`` (one); every
condition block must hold (values OR-ed), a condition key missing from the request fails a
positive operator. An operator this module does not know fails loudly instead of being skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ACCOUNT = "123456789012"
PARTITION = "aws"
KMS_KEY = "0f1e2d3c-0000-4000-8000-000000000000"
# The public registry of the AWS Deep Learning Containers in most regions (us-west-2 included).
DLC_REGISTRY = "763104351884"
_REFERENCE = re.compile(r"\$\{([^}]+)\}")


def _glob(pattern: str, value: str, ignore_case: bool = False) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.IGNORECASE if ignore_case else 0) is not None


def _string_like(expected: str, actual: str) -> bool:
    return _glob(expected, actual)


# Condition operator -> (does one actual value match one expected value, is it negated).
_OPERATORS = {
    "StringEquals": (str.__eq__, False),
    "StringNotEquals": (str.__eq__, True),
    "StringLike": (_string_like, False),
    "StringNotLike": (_string_like, True),
    "ArnLike": (_string_like, False),
    "ArnEquals": (str.__eq__, False),
    "Bool": (lambda expected, actual: expected.lower() == actual.lower(), False),
}


@dataclass(frozen=True)
class Statement:
    sid: str
    effect: str  # "Allow" | "Deny"
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    conditions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (operator, key, values)

    def applies(self, action: str, resource: str, context: dict[str, str]) -> bool:
        if self.actions and not any(_glob(a, action, ignore_case=True) for a in self.actions):
            return False
        if self.not_actions and any(_glob(a, action, ignore_case=True) for a in self.not_actions):
            return False
        if self.resources and not any(_glob(r, resource) for r in self.resources):
            return False
        if self.not_resources and any(_glob(r, resource) for r in self.not_resources):
            return False
        return all(_holds(operator, key, values, context) for operator, key, values in self.conditions)


def _holds(operator: str, key: str, values: tuple[str, ...], context: dict[str, str]) -> bool:
    if operator not in _OPERATORS:
        raise AssertionError(f"condition operator {operator} is not evaluated here: add it to deploy_iam._OPERATORS")
    match, negated = _OPERATORS[operator]
    actual = context.get(key)
    if actual is None:  # the request has no such key: positive operators fail, negated ones hold
        return negated
    found = any(match(expected, actual) for expected in values)
    return not found if negated else found


@dataclass
class Policy:
    statements: list[Statement] = field(default_factory=list)

    def allows(self, action: str, resource: str, context: dict[str, str] | None = None) -> bool:
        context = context or {}
        applicable = [s for s in self.statements if s.applies(action, resource, context)]
        if any(s.effect == "Deny" for s in applicable):
            return False
        return any(s.effect == "Allow" for s in applicable)


def policy(tf: dict, name: str) -> Policy:
    """The statements of ``data.aws_iam_policy_document.<name>``, every reference resolved."""
    found = tf["data"]["aws_iam_policy_document"][name]["statement"]
    return Policy([_statement(tf, body) for body in (found if isinstance(found, list) else [found])])


def _statement(tf: dict, body: dict) -> Statement:
    assert "principals" not in body and "not_principals" not in body, "an identity policy names no principal"
    conditions = body.get("condition", [])
    conditions = conditions if isinstance(conditions, list) else [conditions]
    values = lambda key: tuple(resolve(tf, v) for v in body.get(key, []))  # noqa: E731
    return Statement(
        sid=body.get("sid", ""), effect=body.get("effect", "Allow"),
        actions=values("actions"), not_actions=values("not_actions"),
        resources=values("resources"), not_resources=values("not_resources"),
        conditions=tuple((c["test"], c["variable"], tuple(resolve(tf, v) for v in c["values"])) for c in conditions),
    )


def resolve(tf: dict, text: str) -> str:
    """``text`` with every ``${...}`` replaced by its value in a default apply; an unknown
    reference fails, so nothing is judged on an unresolved string."""
    return _REFERENCE.sub(lambda m: _value(tf, m.group(1).strip()), text)


def bucket_name(tf: dict, module: str) -> str:
    return resolve(tf, tf["module"][module]["name"])


def _value(tf: dict, reference: str) -> str:
    parts = reference.split(".")
    fixed = {"local.account_id": ACCOUNT, "local.partition": PARTITION, "local.region": tf["variable"]["region"]["default"],
             "data.aws_sagemaker_prebuilt_ecr_image.pytorch_inference.registry_id": DLC_REGISTRY}
    if reference in fixed:
        return fixed[reference]
    if parts[0] == "var" and len(parts) == 2:
        return str(tf["variable"][parts[1]]["default"])
    if parts[0] == "local" and len(parts) == 2:
        return resolve(tf, tf["locals"][parts[1]])
    if parts[0] == "module" and len(parts) == 3 and parts[2] in ("id", "arn"):
        name = bucket_name(tf, parts[1])
        return name if parts[2] == "id" else f"arn:{PARTITION}:s3:::{name}"
    if reference == "aws_kms_key.data.arn":
        return f"arn:{PARTITION}:kms:{_value(tf, 'local.region')}:{ACCOUNT}:key/{KMS_KEY}"
    if parts[0] == "aws_iam_role" and len(parts) == 3 and parts[2] == "arn":
        return f"arn:{PARTITION}:iam::{ACCOUNT}:role/{resolve(tf, tf['resource']['aws_iam_role'][parts[1]]['name'])}"
    raise KeyError(f"deploy_iam cannot resolve ${{{reference}}}: teach deploy_iam._value its default-apply value")
