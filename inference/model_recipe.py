"""A model's recipe as its source says it, and the layers over it (a checkpoint's, the options): ``RecipeDraft``.

Torch-free. A source's own config (timm's pretrained_cfg, a Hugging Face image processor, an MLflow model's logged
recipe, a checkpoint's ``recipe``) says some of the recipe's fields, and may be unable to say others: a resize kernel
the recipe has no form for, a non-square size, a crop the processor pads with black, a processor type whose steps the
recipe does not read. Those fields are ``unsaid``, each with why. Every layer over the draft (a checkpoint's recipe,
then the options: ``--resize``, ``--crop``, ``--interpolation``, ``--crop-mode``, ``--mean``, ``--std``) wins over the
fields below it and says what was unsaid, so a refused config can always be run by naming the options; a draft the
options leave unsaid is refused in one line naming why and the options still missing.

A source that says its whole recipe (a torchvision architecture's: ``RecipeDraft.whole``) has nothing left for a later
layer to complete, so each layer over it is checked as it comes and a bad one is named alone (``the recipe in
pets.pt: ...``, ``the recipe options: ...``). A draft with fields unsaid, or said over its base, is checked once, whole,
after its last layer: a layer may be what makes it whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from inference.errors import WeightsError
from preprocess.recipe import IMAGENET_RECIPE, Recipe

OPTIONS = "the options"  # the recipe layer the user's --resize, --crop... make
RECIPE_OPTIONS = "the recipe options"  # how a refusal names that layer
FIELDS = tuple(f.name for f in fields(Recipe))


def option_of(name: str) -> str:
    """The command-line option that sets recipe field ``name``: ``crop_mode`` -> ``--crop-mode``."""
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class RecipeDraft:
    """The recipe fields a model's sources say (over ``base``), those they cannot say and why, and where each came from."""

    source: str  # where ``said`` comes from, e.g. "timm's convnext_atto pretrained_cfg"
    said: Mapping[str, object] = field(default_factory=dict)  # recipe fields, over ``base``
    unsaid: Mapping[str, str] = field(default_factory=dict)  # recipe field -> why the source cannot say it
    base: Recipe = IMAGENET_RECIPE  # the fields no layer says (an MLflow model's logged subset: ResNet50's recipe)
    layers: tuple[str, ...] = ()  # "interpolation from the options": what each layer over the source said

    def __post_init__(self) -> None:
        _known(self.said, self.source)

    @classmethod
    def whole(cls, recipe: Recipe, source: str) -> RecipeDraft:
        """A source's recipe that it says whole (every field, checked): the layers over it are checked one by one."""
        return cls(source, base=recipe)

    def over(self, changes: Mapping[str, object], where: str) -> RecipeDraft:
        """This draft with ``changes`` (any subset of the recipe's fields, from ``where``) winning over it."""
        if isinstance(changes, Mapping) and not changes:
            return self
        _known(changes, where)  # a layer that is not a dict is refused, even an empty one
        layer = f"{', '.join(changes)} from {where}"
        if not self.said and not self.unsaid:  # whole: this layer is checked now, and named alone when it is bad
            checked = _checked(self.base, changes, _named(where))
            return RecipeDraft(self.source, base=checked, layers=(*self.layers, layer))
        unsaid = {name: why for name, why in self.unsaid.items() if name not in changes}
        return RecipeDraft(self.source, {**self.said, **changes}, unsaid, self.base, (*self.layers, layer))

    def recipe(self, shown: str) -> tuple[Recipe, str]:
        """The recipe and where its fields came from; WeightsError naming why and the options still missing when a
        field is unsaid, or a bad value and where it came from."""
        if self.unsaid:
            reasons = list(dict.fromkeys(self.unsaid.values()))  # one reason may cover several fields
            missing = " ".join(option_of(name) for name in FIELDS if name in self.unsaid)
            raise WeightsError(f"{shown}: {'; '.join(reasons)}; pass {missing} to run it with a recipe you name")
        where = "; ".join((self.source, *self.layers))
        return _checked(self.base, self.said, f"the recipe of {where}"), where


def _named(where: str) -> str:
    """How a refusal names a layer: ``the recipe options``, ``the recipe in pets.pt``."""
    return RECIPE_OPTIONS if where == OPTIONS else f"the recipe in {where}"


def _checked(base: Recipe, changes: Mapping[str, object], named: str) -> Recipe:
    try:
        return base.updated(changes, named)
    except ValueError as e:
        raise WeightsError(str(e)) from e


def _known(changes: Mapping[str, object], where: str) -> None:
    """WeightsError naming ``where`` unless ``changes`` is a dict of the recipe's fields."""
    named = _named(where)
    if not isinstance(changes, Mapping):
        raise WeightsError(f"{named} must be a dict of the recipe's fields, found {changes!r}")
    unknown = sorted(repr(key) for key in changes if key not in FIELDS)
    if unknown:
        raise WeightsError(f"{named}: unknown recipe key(s) {', '.join(unknown)}; a recipe has {', '.join(FIELDS)}")

