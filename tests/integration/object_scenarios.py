"""Image objects as --input: scenarios the Ray, Spark and local-engine tests run the same way.

A prefix of tiny JPEG objects in two folders (and one text object, which is no image) runs with one
row per object, ids the keys; a night after adding 3 objects, replacing 1 and deleting 1 redoes only
the groups that held them, and its table equals a fresh full run over the prefix as it is then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow.fs as pafs

from job.input.data_files import FileIdentity
from job.input.objects import group_objects
from job.sample.synthetic import synthetic_rows
from storage import resolve
from tests.common.contract import read_output
from tests.integration.checks_scenarios import job_args

Main = Callable[[Sequence[str] | None], dict]
PER_PART = 2  # objects per part: 32 objects make about 16 groups, so a night of 5 changes leaves most alone
SMALL = ("--resize", "40", "--crop", "32")  # a tiny model input: the scenario tests the input, not the model
NOT_AN_IMAGE = "b/notes.txt"


def put_objects(uri: str, endpoint: str | None, keys: Sequence[str], seed: int) -> None:
    """A tiny JPEG at each key (relative to ``uri``); each seed draws other images (other sizes)."""
    location = resolve(uri, endpoint)
    images = synthetic_rows(len(keys), "jpeg", (32, 24), seed=seed)
    for key, (_, data) in zip(keys, images):
        with location.writer(location.join(key)) as out:
            out.write(data)


def listed(uri: str, endpoint: str | None) -> dict[str, FileIdentity]:
    """The objects under ``uri`` as the job lists them: key relative to it -> identity."""
    location = resolve(uri, endpoint)
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True))
    root = location.path.rstrip("/") + "/"
    return {i.path.removeprefix(root): FileIdentity(i.size, i.mtime_ns) for i in infos if i.type == pafs.FileType.File}


def groups_of(uri: str, endpoint: str | None) -> dict[str, tuple]:
    """Group name -> (member keys, identity), as the job groups the prefix."""
    objects = listed(uri, endpoint)
    keys = sorted(objects)
    return {g.name: (set(keys[g.start : g.end]), g.identity) for g in group_objects(keys, [objects[k] for k in keys], PER_PART)}


def objects_run_as_they_lie_and_a_night_redoes_only_their_groups(main: Main, root: str, endpoint: str | None,
                                                                   *engine_args: str) -> None:
    source, out = f"{root}/in", f"{root}/out"
    keys = [f"{'ab'[i % 2]}/img-{i:03d}.jpg" for i in range(32)]
    put_objects(source, endpoint, keys, seed=1)
    resolve(source, endpoint).writer(resolve(source, endpoint).join(NOT_AN_IMAGE)).close()  # 0 bytes: no image
    args = job_args(source, out, endpoint, "--incremental", "--objects-per-part", str(PER_PART), *SMALL, *engine_args)
    first = main(args)
    rows, _ = read_output(out, endpoint)
    assert sorted(r["id"] for r in rows) == sorted([*keys, NOT_AN_IMAGE])  # one row per object, ids = keys
    assert [r["id"] for r in rows if r["error"]] == [NOT_AN_IMAGE]
    before = groups_of(source, endpoint)
    assert first["input_files"]["total"] == len(before) > 2 and first["counts"]["rows_out"] == 33

    added, replaced, deleted = ["a/img-100.jpg", "b/img-101.jpg", "c/img-102.jpg"], keys[5], keys[12]
    put_objects(source, endpoint, [*added, replaced], seed=2)
    resolve(source, endpoint).filesystem.delete_file(resolve(source, endpoint).join(deleted))
    after = groups_of(source, endpoint)
    night = main(args)
    delta = night["table"]["delta"]
    touched = {*delta["added"], *delta["replaced"], *delta["removed"]}
    changed = {*added, replaced, deleted}
    holding = {name for groups in (before, after) for name, (members, _) in groups.items() if members & changed}
    assert touched and touched == _differing(before, after) and len(touched) <= 2 * len(changed) < len(after)
    assert holding <= touched  # each group that held a changed object is redone...
    assert all(_neighbours(name, holding, before, after) for name in touched - holding)  # ...and a split's other half
    assert night["input_files"]["resumed"] == len(after) - len(touched & set(after))

    rows, _ = read_output(out, endpoint)
    fresh = main(job_args(source, f"{root}/fresh", endpoint, "--objects-per-part", str(PER_PART), *SMALL, *engine_args))
    fresh_rows, _ = read_output(f"{root}/fresh", endpoint)
    assert _by_id(rows) == _by_id(fresh_rows) and fresh["counts"] == night["counts"]
    assert set(_by_id(rows)) == ({*keys, NOT_AN_IMAGE, *added} - {deleted})


def _differing(before: dict[str, tuple], after: dict[str, tuple]) -> set[str]:
    """Group names new, gone, or with other members' identities."""
    return {name for name in {*before, *after} if before.get(name, (None, None))[1] != after.get(name, (None, None))[1]}


def _neighbours(name: str, holding: set[str], *groupings: dict[str, tuple]) -> bool:
    """Whether group ``name`` is next to a group holding a changed object (a boundary key's split or join)."""
    for groups in groupings:
        names = sorted(groups)
        if name in names:
            at = names.index(name)
            if {*names[max(0, at - 1) : at + 2]} & holding:
                return True
    return False


def _by_id(rows: list[dict]) -> dict[str, tuple]:
    return {r["id"]: (r["label"], r["topk_labels"], r["error"]) for r in rows}
