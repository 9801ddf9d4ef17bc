"""A user's checkpoint: every layout people save loads exactly; everything else is refused in one line."""

from __future__ import annotations

import warnings

import pytest
import torch
from torchvision.models import resnet18

from inference import WeightsError, describe_model, load_model
from inference.checkpoint import read_checkpoint
from tests.common.checkpoints import LAYOUTS, seeded_resnet50, write_checkpoint

NAMES = [f"class {i}" for i in range(10)]


@pytest.fixture(scope="module")
def fine_tuned():
    return seeded_resnet50(10, seed=3)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_loads_the_exact_weights_and_names(fine_tuned, layout, tmp_path):
    path = write_checkpoint(tmp_path / f"{layout}.pt", fine_tuned.state_dict(), layout, class_names=NAMES)
    loaded = load_model(describe_model(str(path)))
    assert loaded.spec.num_classes == 10 and loaded.spec.class_names == tuple(NAMES)
    theirs = fine_tuned.state_dict()
    ours = loaded.module.state_dict()
    assert ours.keys() == theirs.keys()
    for name, tensor in theirs.items():
        assert torch.equal(ours[name], tensor), name


def _refusal(path, capfd) -> str:
    """The WeightsError loading ``path`` gives; it must be one line, with nothing printed or warned."""
    with warnings.catch_warnings(record=True) as seen, pytest.raises(WeightsError) as refused:
        warnings.simplefilter("always")
        describe_model(str(path))
    message = str(refused.value)
    assert "\n" not in message and "weights_only=False" not in message and "weights_only` set to `False" not in message
    assert not [w for w in seen if not issubclass(w.category, ResourceWarning)], [str(w.message) for w in seen]
    assert capfd.readouterr() == ("", "")
    return message


def test_a_dict_without_a_state_dict_names_what_it_holds(tmp_path, capfd):
    torch.save({"epoch": 3, "optimizer": {"lr": 0.1}}, tmp_path / "c.pt")
    assert "no state dict found: a dict with keys epoch, optimizer and no tensors" in _refusal(tmp_path / "c.pt", capfd)
    torch.save([torch.zeros(1), torch.zeros(2)], tmp_path / "l.pt")
    assert "no state dict found: a list of 2 items" in _refusal(tmp_path / "l.pt", capfd)


def test_a_pickled_module_names_the_refused_global(tmp_path, capfd):
    torch.save(torch.nn.Linear(3, 4), tmp_path / "m.pt")
    message = _refusal(tmp_path / "m.pt", capfd)
    assert "it needs torch.nn.modules.linear.Linear to load, which weights_only loading refuses" in message
    assert "torch.save(model.state_dict(), path)" in message


def test_a_torchscript_archive_is_named_without_torchs_warning(tmp_path, capfd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.* are deprecated; the archive is what users still have
        torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), tmp_path / "ts.pt")
    assert "a TorchScript archive (torch.jit.save), not a state dict" in _refusal(tmp_path / "ts.pt", capfd)


@pytest.mark.parametrize("content, found", [
    (b"hello, I am a text file\n", "not a PyTorch checkpoint (a file written by torch.save): it starts with b'hello, I'"),
    (b"", "an empty file, not a PyTorch checkpoint"),
])
def test_a_file_that_is_not_a_checkpoint_says_so(tmp_path, capfd, content, found):
    (tmp_path / "x.pt").write_bytes(content)
    assert found in _refusal(tmp_path / "x.pt", capfd)


def test_a_truncated_checkpoint_is_called_damaged(fine_tuned, tmp_path, capfd):
    whole = write_checkpoint(tmp_path / "whole.pt", fine_tuned.state_dict()).read_bytes()
    (tmp_path / "cut.pt").write_bytes(whole[: len(whole) // 2])
    assert "a damaged or unsupported PyTorch checkpoint (PytorchStreamReader failed" in _refusal(tmp_path / "cut.pt", capfd)


def test_another_architecture_names_missing_keys_and_shapes(tmp_path, capfd):
    torch.save(resnet18(num_classes=10).state_dict(), tmp_path / "r18.pt")
    message = _refusal(tmp_path / "r18.pt", capfd)
    assert message.startswith(f"{tmp_path / 'r18.pt'}: not a resnet50 state dict: ")
    assert "missing keys (layer1.0.conv3.weight, " in message
    assert "shapes differ (layer1.0.conv1.weight (64, 64, 3, 3) where resnet50 has (64, 64, 1, 1), " in message
    assert message.endswith("pass the architecture it was trained as (--arch), or a resnet50 checkpoint")


def test_non_tensor_entries_in_a_state_dict_are_named(fine_tuned, tmp_path, capfd):
    torch.save({**fine_tuned.state_dict(), "note": "best run"}, tmp_path / "n.pt")
    assert "the state dict holds 1 entries that are not tensors: note (str)" in _refusal(tmp_path / "n.pt", capfd)


def test_half_precision_and_missing_batchnorm_counters_load_as_a_fresh_module_would(fine_tuned, tmp_path):
    state = {k: v.half() if v.is_floating_point() else v for k, v in fine_tuned.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    torch.save(state, tmp_path / "half.pt")
    loaded = load_model(str(tmp_path / "half.pt")).module
    assert loaded.fc.weight.dtype == torch.float32
    assert torch.equal(loaded.fc.weight, fine_tuned.fc.weight.half().float())
    assert int(loaded.bn1.num_batches_tracked) == 0


def test_class_to_idx_gives_names_in_index_order_and_disagreeing_lists_are_refused(fine_tuned, tmp_path, capfd):
    state = fine_tuned.state_dict()
    torch.save({"state_dict": state, "class_to_idx": {name: 9 - i for i, name in enumerate(NAMES)}}, tmp_path / "c.pt")
    assert read_checkpoint(str(tmp_path / "c.pt")).class_names == NAMES[::-1]
    torch.save({"state_dict": state, "class_names": NAMES, "classes": NAMES[::-1]}, tmp_path / "d.pt")
    assert "class_names and classes disagree" in _refusal(tmp_path / "d.pt", capfd)
    torch.save({"state_dict": state, "class_to_idx": {"a": 0, "b": 2}}, tmp_path / "e.pt")
    assert "class_to_idx must map each name to a distinct index 0..1, got [0, 2]" in _refusal(tmp_path / "e.pt", capfd)


def test_a_compiled_modules_prefix_is_stripped(fine_tuned, tmp_path):
    torch.save({f"_orig_mod.{k}": v for k, v in fine_tuned.state_dict().items()}, tmp_path / "compiled.pt")
    assert torch.equal(load_model(str(tmp_path / "compiled.pt")).module.fc.bias, fine_tuned.fc.bias)


def test_a_lightning_checkpoint_with_a_key_beside_the_network_names_it_not_the_architecture(fine_tuned, tmp_path, capfd):
    network = {f"model.{k}": v for k, v in fine_tuned.state_dict().items()}
    torch.save({"state_dict": {**network, "criterion.pos_weight": torch.ones(1)}, "epoch": 7}, tmp_path / "l.pt")
    message = _refusal(tmp_path / "l.pt", capfd)
    assert f"{len(network)} keys start with 'model.' (the network) and 1 do not (criterion.pos_weight)" in message
    assert message.endswith("save the network's weights alone, torch.save(model.state_dict(), path)")
    assert "--arch" not in message


def test_a_plain_state_dict_with_a_key_beside_the_network_names_it_not_the_architecture(fine_tuned, tmp_path, capfd):
    torch.save({**fine_tuned.state_dict(), "loss.weight": torch.ones(10)}, tmp_path / "p.pt")
    message = _refusal(tmp_path / "p.pt", capfd)
    assert "a resnet50 state dict with 1 keys that are not the network's (loss.weight)" in message
    assert "save the network's weights alone" in message and "--arch" not in message


def test_a_moving_average_beside_the_weights_is_refused_naming_both(fine_tuned, tmp_path, capfd):
    state = fine_tuned.state_dict()
    both = {**{f"model.{k}": v for k, v in state.items()}, **{f"model_ema.{k}": v for k, v in state.items()}}
    torch.save({"state_dict": both, "epoch": 7}, tmp_path / "prefixed.pt")
    message = _refusal(tmp_path / "prefixed.pt", capfd)
    assert f"two copies of the weights: {len(state)} keys under 'model_ema.' (a moving average) beside {len(state)} others" in message
    assert "neither is chosen for you: save the one you mean alone" in message and "--arch" not in message
    torch.save({"model": state, "model_ema": state, "epoch": 7}, tmp_path / "beside.pt")
    message = _refusal(tmp_path / "beside.pt", capfd)
    assert "two copies of the weights, 'model' and its moving average 'model_ema'; neither is chosen for you" in message
    assert "torch.save(checkpoint['model'], path) or torch.save(checkpoint['model_ema'], path)" in message


def test_a_moving_average_saved_alone_loads_exactly(fine_tuned, tmp_path):
    state = fine_tuned.state_dict()
    torch.save({"state_dict": {f"model_ema.module.{k}": v for k, v in state.items()}}, tmp_path / "ema.pt")  # timm's ModelEmaV2
    loaded = load_model(str(tmp_path / "ema.pt")).module.state_dict()
    assert loaded.keys() == state.keys() and all(torch.equal(loaded[k], v) for k, v in state.items())
