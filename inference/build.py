"""Build an ``--arch`` network, empty or holding a state dict's weights; weights that do not fit are refused.

``check_fits(state, arch, source)`` returns the number of logits a state dict's head gives, or
raises one ``WeightsError`` line naming the missing, unexpected and misshapen keys (torch's own
message is a multi-line block whose first line, "Error(s) in loading state_dict for ResNet50:",
says nothing). ``module_with(state, arch, source)`` builds ``arch`` with that head and loads the
weights. The head must be a plain Linear, (logits, embedding size); how its logits become class
scores (softmax, or sigmoid for one logit) is ``inference.scores``' business.

ResNet50 comes from ``inference.resnet`` (torch only); every other architecture from
``torchvision.models.get_model``, imported here only when one is asked for.
"""

from __future__ import annotations

import torch
from torch import nn

from inference.archs import DEFAULT_ARCH, Arch
from inference.checkpoint import SAVE_WEIGHTS, some_keys
from inference.errors import WeightsError
from inference.resnet import NUM_CLASSES, ResNet50

StateDict = dict[str, torch.Tensor]
UNTRACKED = "num_batches_tracked"  # BatchNorm's step counter: unused in eval, absent from some exports


def build(arch: Arch, num_classes: int = NUM_CLASSES) -> nn.Module:
    """``arch`` with a ``num_classes`` head, initialised as torchvision does (on the current default device)."""
    if arch.name == DEFAULT_ARCH:
        return ResNet50(num_classes)
    from torchvision.models import get_model  # imports torchvision whole: only for the other architectures

    return get_model(arch.name, weights=None, num_classes=num_classes)


def head_logits(state: StateDict, arch: Arch, source: str) -> int | None:
    """The logits ``state``'s head gives (its weight's rows); None when it has no head weight.

    A head weight that is not a Linear's 2-D (logits, features) with at least one row is refused:
    the weights end in something this architecture's classifier is not.
    """
    weight = state.get(f"{arch.head}.weight")
    if not isinstance(weight, torch.Tensor):
        return None  # check_fits names it among the missing keys
    if weight.ndim != 2 or weight.shape[0] < 1:
        raise WeightsError(f"{source}: its head {arch.head}.weight has shape {tuple(weight.shape)}, not a Linear's "
                           f"(classes, {arch.embedding_dim}); pass the --arch it was trained as, and --labels with "
                           "one name per class (a one-logit head is a binary classifier: two names)")
    return weight.shape[0]


def check_fits(state: StateDict, arch: Arch, source: str) -> int:
    """The logits ``state``'s head gives, or WeightsError naming the keys and shapes ``arch`` lacks."""
    logits = head_logits(state, arch, source)
    with torch.device("meta"):  # shapes only: no memory, no init work
        expected = build(arch, logits or NUM_CLASSES).state_dict()
    _refuse_mismatch(state, expected, arch, source)
    return logits


def module_with(state: StateDict, arch: Arch, source: str) -> nn.Module:
    """``arch`` holding copies of ``state``'s tensors, in eval mode; WeightsError naming what does not fit."""
    logits = check_fits(state, arch, source)
    with torch.device("meta"):  # no init work: every tensor comes from ``state``
        module = build(arch, logits)
    # Copies, so no caller's module (moved, cast, compiled) can touch the cached tensors.
    owned = {name: tensor.clone() for name, tensor in state.items()}
    for name in module.state_dict().keys() - owned.keys():  # check_fits allows only untracked counters here
        owned[name] = torch.zeros((), dtype=torch.long)
    module.load_state_dict(owned, assign=True)
    return module.eval()


def _refuse_mismatch(state: StateDict, expected: StateDict, arch: Arch, source: str) -> None:
    missing = [key for key in expected if key not in state and not key.endswith(UNTRACKED)]
    unexpected = [key for key in state if key not in expected]
    misshapen = [f"{key} {tuple(state[key].shape)} where {arch.name} has {tuple(expected[key].shape)}"
                 for key in expected if key in state and state[key].shape != expected[key].shape]
    if not (missing or misshapen) and unexpected:
        # Every weight the network needs is there: the file holds more than the network, not another network.
        raise WeightsError(f"{source}: a {arch.name} state dict with {len(unexpected)} keys that are not the "
                           f"network's ({some_keys(unexpected)}); save the network's weights alone, {SAVE_WEIGHTS}")
    problems = [f"{len(keys)} {kind} ({some_keys(keys)})" for kind, keys in
                (("missing keys", missing), ("unexpected keys", unexpected), ("shapes differ", misshapen)) if keys]
    if problems:
        raise WeightsError(f"{source}: not a {arch.name} state dict: {'; '.join(problems)}; "
                           f"pass the architecture it was trained as (--arch), or a {arch.name} checkpoint")

