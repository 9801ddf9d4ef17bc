"""``--model hf:PATH``: a Hugging Face folder written by ``save_pretrained``, local or ``s3://``.

Use it through its row of ``inference.sources`` (its ``inference.network.NetworkCode``: ``locate``, ``open_network``,
``local_folder``). The folder is read in the order that refuses each problem with its own line before anything large
is loaded: its ``config.json`` (``inference.hf_classes``: a classifier, an embedder, or not an image model), its image
processor (``inference.hf_processor``: the recipe), its weights (``inference.hf_weights``: every layout
``save_pretrained`` writes, checked and counted), whether they fit in memory (``inference.memory``), and only then the
model, with ``local_files_only`` and in fp32; a key missing, of another shape, or unexpected (but the text side of a
whole CLIP/SigLIP) is refused by name.

A classifier's names come from ``id2label`` (unless they are transformers' placeholders ``LABEL_0``...); its embedding
is its final Linear's input (a ViT's class token after the last norm, a ConvNeXt's pooled feature), or, for a
distilled classifier whose logits average two heads, both heads' inputs side by side (``inference.heads``). A head
trained multi-label (``problem_type: multi_label_classification``) is scored by each class's sigmoid.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from inference.checkpoint import some_keys
from inference.errors import WeightsError
from inference.heads import averaged_heads
from inference.hf_classes import CLASSIFIER, Embedding, Logits, Tower, logits_of, what_it_holds
from inference.hf_folder import CONFIG, on_this_machine, read_json, transformers_quiet
from inference.hf_processor import processor_draft
from inference.hf_weights import Weights, checked_weights
from inference.memory import require_fits
from inference.network import Located, Network
from inference.weights import RANDOM_WEIGHTS, RANDOM_WEIGHTS_SEED
from storage import redact

OTHER_TOWER = ("text_model.", "text_projection.", "logit_scale", "logit_bias")  # a whole CLIP/SigLIP's other side
MULTI_LABEL = "multi_label_classification"  # a config's problem_type for a head of independent yes/no classes
AVERAGED = "its {count} heads' inputs side by side ({heads}), whose logits it averages"
PROBE_SIZE = 224  # the merged heads' check runs on two images of the config's image_size, else this


def locate(folder: str, s3_endpoint_url: str | None) -> Located:
    return Located(f"hf:{redact(folder)}", folder)


def local_folder(folder: str, weights: str, s3_endpoint_url: str | None, store: object) -> str:
    """A local folder holding the model's files (the folder itself, or a copy of an S3 folder's), e.g. to ship it."""
    return on_this_machine(folder, s3_endpoint_url, weights != RANDOM_WEIGHTS)


def open_network(folder: str, weights: str, s3_endpoint_url: str | None, store: object) -> Network:
    """The folder's classifier or embedder, its weights (or seeded random ones), recipe and names."""
    shown = f"hf:{redact(folder)}"
    local = on_this_machine(folder, s3_endpoint_url, weights != RANDOM_WEIGHTS)
    config = read_json(local, CONFIG, shown, "not a folder written by save_pretrained")
    held, architecture = what_it_holds(config, shown), (config.get("architectures") or [None])[0]
    recipe = processor_draft(local, shown)
    found = None if weights == RANDOM_WEIGHTS else checked_weights(local, shown)
    sha256 = None if found is None else found.sha256
    if held != CLASSIFIER:
        model = _tower(held, local, found, shown)
        return Network(Embedding(model, held.output, held.normalised).eval(), None, architecture, sha256, recipe,
                       embedding=held.embedding)
    import transformers

    model = _load(transformers.AutoModelForImageClassification, local, _config(local), found, shown, ())
    module, head, embedding = _with_head(model, shown)
    return Network(module, head, architecture, sha256, recipe, *_names(model.config.id2label, shown),
                   **({"embedding": embedding} if embedding else {}),
                   multi_label=model.config.problem_type == MULTI_LABEL and model.config.num_labels > 1)


def _config(local: str) -> object:
    import transformers

    with transformers_quiet():
        return transformers.AutoConfig.from_pretrained(local, local_files_only=True)


def _tower(tower: Tower, local: str, found: Weights | None, shown: str) -> nn.Module:
    import transformers

    config = _config(local)
    sub = getattr(config, tower.sub_config) if tower.sub_config else config
    for key in tower.carried:
        setattr(sub, key, getattr(config, key))
    return _load(getattr(transformers, tower.model_class), local, sub, found, shown, OTHER_TOWER if tower.sub_config else ())


def _load(cls: type, local: str, config: object, found: Weights | None, shown: str, others: tuple[str, ...]) -> nn.Module:
    """``cls`` with the folder's weights (strictly: ``others`` may be left unread) or seeded random ones (``found``
    None), fp32, eval; first refused when its parameters do not fit in this machine's memory."""
    with transformers_quiet():
        require_fits(_parameters(cls, config) if found is None else found.parameters, shown)
        if found is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(RANDOM_WEIGHTS_SEED)
                return _built(cls, config).float().eval()
        try:
            model, info = cls.from_pretrained(local, config=config, local_files_only=True, output_loading_info=True,
                                              dtype=torch.float32, ignore_mismatched_sizes=True)
        except (OSError, ValueError, RuntimeError) as e:
            raise WeightsError(f"{shown}: transformers cannot load it ({' '.join(str(e).split())[:300]})") from e
    unexpected = [key for key in info["unexpected_keys"] if not key.startswith(others)] if others else list(info["unexpected_keys"])
    problems = [f"{len(keys)} {kind} ({some_keys(sorted(map(str, keys)))})" for kind, keys in
                (("missing keys", info["missing_keys"]), ("unexpected keys", unexpected),
                 ("shapes differ", info["mismatched_keys"])) if keys]
    if problems:
        weights = found.files[0] if len(found.files) == 1 else f"{found.files[0]} and its {len(found.files) - 1} shards"
        raise WeightsError(f"{shown}: its {weights} {'does' if len(found.files) == 1 else 'do'} not fit its {CONFIG}: "
                           f"{'; '.join(problems)}; save the model and its config together with save_pretrained")
    return model.eval()


def _built(cls: type, config: object) -> nn.Module:
    return cls.from_config(config) if hasattr(cls, "from_config") else cls(config)


def _parameters(cls: type, config: object) -> int:
    """The parameters ``cls`` of ``config`` has, counted on the meta device (nothing allocated)."""
    with torch.device("meta"):
        return sum(parameter.numel() for parameter in _built(cls, config).parameters())


def _with_head(model: nn.Module, shown: str) -> tuple[nn.Module, str, str | None]:
    """(module(pixels) -> logits, its final Linear's path, what the embedding is when not that Linear's input): the
    Linear heads outside the model's backbone (``base_model_prefix``) giving one number per label; several are
    merged into one (``inference.heads``: a distilled classifier)."""
    backbone = f"{model.base_model_prefix}."
    heads = [name for name, m in model.named_modules() if isinstance(m, nn.Linear)
             and m.out_features == model.config.num_labels and not name.startswith(backbone)]
    if not heads:
        raise WeightsError(f"{shown}: no Linear of {model.config.num_labels} outputs (one per label) found to be its head")
    if len(heads) == 1:
        return Logits(model).eval(), "model." + heads[0], None
    size = getattr(model.config, "image_size", PROBE_SIZE)
    size = size if isinstance(size, int) else PROBE_SIZE
    probe = torch.rand((2, 3, size, size), generator=torch.Generator().manual_seed(0))
    merged = averaged_heads(model, heads, logits_of, probe, logits_of, shown)
    return merged, "head", AVERAGED.format(count=len(heads), heads=", ".join(heads))


def _names(id2label: Mapping[object, str], shown: str) -> tuple[list[str] | None, str | None]:
    """``id2label`` in index order; None when they are transformers' placeholders (LABEL_0, LABEL_1, ...)."""
    names = [id2label[index] for index in sorted(id2label, key=int)]
    if names == [f"LABEL_{i}" for i in range(len(names))]:
        return None, None
    return names, f"id2label of {shown}"
