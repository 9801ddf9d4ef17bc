"""What made a part's rows, as one key: the options that shape them (the model, its recipe, the decode, the columns).

Every part records the options it was made with (its footer; ``job.output.parts.output_options``), and the table's
snapshot records, per input file, the key of those options (``TableFile.made_by``) and the options of each key in the
table (``Snapshot.models``). Two parts' rows are comparable when their keys are equal; a night whose options differ
from a file's is either a rollout (``job.night.rollout``) or refused, naming what differs (``differing``).

Options recorded before a field existed read as that field's value then (``normalised``): a recipe without an
interpolation or crop mode was the bilinear centre crop every recipe was, rows made before ``--cpu-resize`` were
Pillow's (``exact``), and a model recorded without its ``source`` was a torchvision name, its ``arch``. Fields added
since are left out at the value every older row was made with (``UNRECORDED``: a recipe's RGB channel order, a head
scored by softmax or a one-logit sigmoid), so a table's recorded keys stay its keys.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from job.output.rows import model_lineage
from preprocess.recipe import Recipe

KEY_HEX = 12  # 48 bits of the options' digest: a table holds a few option sets in its life, never millions
# Fields added after tables recorded their keys, at the values every row was made with before: left out of the key.
UNRECORDED_RECIPE = {"channel_order": "rgb"}
UNRECORDED = {"activation": ("softmax", "sigmoid")}  # a multi-label head's scores (each class's sigmoid) are recorded


def normalised(options: Mapping) -> dict:
    """``options`` with the fields an older record lacks at the values it was made with: its recipe's later fields
    (interpolation, crop mode, crop offset: today's defaults, a bilinear centre crop rounded as torchvision does) and
    ``cpu_resize`` (exact: Pillow resized every row before the fast path was the default); the fields of
    ``UNRECORDED`` left out at the values older rows had."""
    options = {"cpu_resize": "exact", **options}
    if "source" not in options and "arch" in options:  # every model was a torchvision name then: its source
        options["source"] = options["arch"]
    options = {name: value for name, value in options.items() if value not in UNRECORDED.get(name, ())}
    recipe = options.get("recipe")
    if isinstance(recipe, Mapping):
        recipe = {**Recipe().to_dict(), **recipe}
        return {**options, "recipe": {k: v for k, v in recipe.items() if UNRECORDED_RECIPE.get(k, object()) != v}}
    return options


def options_key(options: Mapping) -> str:
    """The key of a set of options: equal for options that make the same rows."""
    text = json.dumps(normalised(options), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_HEX]


def differing(recorded: Mapping, current: Mapping) -> list[str]:
    """The option names whose values differ between a recorded and the current set, sorted."""
    recorded, current = normalised(recorded), normalised(current)
    return sorted(name for name in current.keys() | recorded.keys() if recorded.get(name) != current.get(name))


def difference_line(recorded: Mapping, current: Mapping) -> str:
    """``weights, recipe; e.g. weights='a.pt', now 'b.pt'``: what differs, for a refusal."""
    names = differing(recorded, current)
    first = names[0]
    return f"{', '.join(names)}; e.g. {first}={normalised(recorded).get(first)!r}, now {normalised(current).get(first)!r}"


def model_label(options: Mapping) -> str:
    """The model the options name, as the rows' ``model`` column names it."""
    options = normalised(options)
    return model_lineage(options.get("source") or "unknown", options.get("weights"), options.get("weights_sha256"))
