"""Image objects as input, without an engine: groups stable under inserts and deletes, the prefix's kind,
the parallel listing, the reader's error rows."""

from __future__ import annotations

import dataclasses

import pyarrow.fs as pafs
import pytest

from job.config import JobConfig
from job.errors import JobError
from job.input import data_files as listing, objects
from job.input.data_files import FileIdentity, list_data_files
from job.input.objects import LEADING, MAX_PER_PART_FACTOR, group_objects, key_ranges, starts_group
from job.input.objects import READ_ERROR, read_objects
from job.night.formats.by_source import Leaving
from job.prepare import plan_input
from storage import resolve


def listed(keys, mtime: int = 1) -> dict[str, FileIdentity]:
    return {key: FileIdentity(100, mtime) for key in keys}


KEYS = [f"photos/2026/{i:06d}.jpg" for i in range(20_000)]


def groups(objects: dict[str, FileIdentity], per_part: int = 64):
    keys = sorted(objects)
    return group_objects(keys, [objects[k] for k in keys], per_part)


def identities(keys, per_part: int = 64) -> dict[str, FileIdentity]:
    return {g.name: g.identity for g in groups(listed(keys), per_part)}


def test_groups_hold_about_the_expected_size_and_never_more_than_the_maximum():
    cut = groups(listed(KEYS))
    sizes = [g.end - g.start for g in cut]
    assert cut[0].start == 0 and cut[-1].end == len(KEYS) and all(a.end == b.start for a, b in zip(cut, cut[1:]))
    assert 64 * 0.8 < len(KEYS) / len(cut) < 64 * 1.2 and max(sizes) <= 64 * MAX_PER_PART_FACTOR


def test_one_object_added_or_removed_changes_one_or_two_groups_not_every_later_one():
    before = identities(KEYS)
    inner = next(k for k in KEYS[1000:] if not starts_group(k, 64))
    boundary = next(k for k in KEYS[1000:] if starts_group(k, 64))
    for keys in ([*KEYS, "photos/2026/000500a.jpg"], [k for k in KEYS if k != inner], [k for k in KEYS if k != boundary]):
        after = identities(keys)
        changed = {name for name in {*before, *after} if before.get(name) != after.get(name)}
        assert 1 <= len(changed) <= 2, changed


def test_a_key_sorted_first_does_not_rename_the_leading_group():
    keys = [k for k in KEYS[:500]]
    first = next(k for k in keys if not starts_group(k, 64))
    cut = groups(listed(keys[keys.index(first):]))
    grown = groups(listed(["photos/0.jpg", *keys[keys.index(first):]]))
    assert cut[0].name == grown[0].name == LEADING and [g.name for g in cut] == [g.name for g in grown]


def test_a_rewritten_object_changes_its_groups_identity_alone():
    rewritten = {**listed(KEYS), KEYS[7000]: FileIdentity(100, 2)}  # same size, new mtime
    after = {g.name: g.identity for g in groups(rewritten)}
    before = identities(KEYS)
    assert len({name for name in before if before[name] != after[name]}) == 1


def write(folder, names):
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"\xff\xd8\xff" + name.encode())


def test_a_prefix_is_images_by_names_parquet_alone_stays_parquet_and_mixed_is_refused(tmp_path):
    write(tmp_path / "images", ["a.JPG", "b/c.png", "notes"])
    write(tmp_path / "tables", ["part-0.parquet"])
    write(tmp_path / "mixed", ["part-0.parquet", "x/a.webp"])
    for name, expected in (("images", True), ("tables", False)):
        location = resolve(str(tmp_path / name))
        assert list_data_files(location).images is expected
    location = resolve(str(tmp_path / "mixed"))
    with pytest.raises(JobError, match=r"holds both Parquet files .*part-0.parquet\) and image files .*a.webp\); point --input"):
        list_data_files(location)


def test_an_empty_prefix_is_refused_in_one_line(tmp_path):
    with pytest.raises(JobError, match="no Parquet files under this prefix; check --input") as refusal:
        list_data_files(resolve(str(tmp_path)))
    assert "\n" not in str(refusal.value)


def test_unreadable_and_oversized_objects_are_error_rows_and_the_group_goes_on(tmp_path, monkeypatch):
    write(tmp_path, ["a.jpg", "big.jpg", "g.jpg", "z.jpg"])
    location = resolve(str(tmp_path))
    members = tuple((str(tmp_path / n), (tmp_path / n).stat().st_size) for n in ["a.jpg", "big.jpg", "g.jpg", "z.jpg"])
    (tmp_path / "g.jpg").unlink()
    monkeypatch.setattr(objects, "MAX_OBJECT_BYTES", members[0][1])  # big.jpg is 2 bytes longer than the others
    batches = list(read_objects(location, members, "image", batch_rows=3))
    ids = [i for batch_ids, _ in batches for i in batch_ids]
    records = [r for _, batch in batches for r in batch.to_pylist()]
    assert ids == ["a.jpg", "big.jpg", "g.jpg", "z.jpg"] and [len(b) for _, b in batches] == [3, 1]
    assert records[0] == {"image": b"\xff\xd8\xffa.jpg", READ_ERROR: None} and records[3]["image"] == b"\xff\xd8\xffz.jpg"
    assert records[1]["image"] is None and records[1][READ_ERROR].startswith(f"object too large: {tmp_path}/big.jpg is 10 bytes")
    assert records[2]["image"] is None and records[2][READ_ERROR].startswith(f"object gone: {tmp_path}/g.jpg was deleted")


def test_the_parallel_listing_finds_what_one_recursive_listing_finds(data_root, monkeypatch):
    root, endpoint = data_root
    location = resolve(f"{root}/tree", endpoint)
    names = [f"{top}/{mid}/{leaf}.jpg" for top in "abc" for mid in ("x", "y/z") for leaf in range(3)] + ["top.jpg", "a/one.jpg"]
    for name in names:
        with location.writer(location.join(name)) as out:
            out.write(b"x")
    monkeypatch.setattr(listing, "LISTING_THREADS", 4)  # so that it walks two levels before listing in parallel
    found = {i.path: i.type for i in listing.list_tree(location.filesystem, location.path)}
    expected = {i.path: i.type for i in location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True))}
    assert found == expected and sum(t == pafs.FileType.File for t in found.values()) == len(names)


def test_the_plan_of_an_image_prefix_holds_every_object_once_and_limit_takes_the_first_keys(tmp_path):
    names = [f"{folder}/img-{i:02d}.jpg" for folder in "ab" for i in range(10)]
    write(tmp_path / "in", names)
    location = resolve(str(tmp_path / "in"))
    config = JobConfig(input=str(tmp_path / "in"), output=str(tmp_path / "out"), objects_per_part=4)
    plan = plan_input(location, config)
    keys = [path.removeprefix(f"{tmp_path}/in/") for f in plan.files for path, _ in f.members]
    assert keys == sorted(names) and plan.rows == 20 and plan.id_column is None and plan.unit == "object groups"
    assert all(f.rows == len(f.members) and f.identity.members for f in plan.files)
    limited = plan_input(location, dataclasses.replace(config, limit=3))
    assert [path for f in limited.files for path, _ in f.members] == [f"{tmp_path}/in/a/img-0{i}.jpg" for i in range(3)]


def test_the_cpu_stage_gives_an_unread_object_its_reason_and_decodes_the_others(tmp_path):
    from job.execution import Capabilities, Devices, decide, model_for
    from job.stages import Preprocess
    from tests.common.images import encoded, photo

    (tmp_path / "ok.jpg").write_bytes(encoded(photo(64, 48)))
    (tmp_path / "notes.txt").write_bytes(b"not an image")
    listed_sizes = [(str(tmp_path / n), (tmp_path / n).stat().st_size) for n in ["notes.txt", "ok.jpg"]]
    members = ((str(tmp_path / "gone.jpg"), 10), *listed_sizes)  # gone.jpg: listed, then deleted before the read
    config = JobConfig(input=str(tmp_path), output=None, weights="random", crop=32, resize=40)
    stage = Preprocess(config, decide(config, Capabilities(), Devices("cpu"), 0, model=model_for(config)))
    (ids, records), = read_objects(resolve(str(tmp_path)), members, "image", batch_rows=8)
    batch = stage(ids, records)
    assert batch.ids == ["gone.jpg", "notes.txt", "ok.jpg"] and batch.pixels.shape == (1, 32, 32, 3)
    assert batch.errors[0].startswith("object gone: ") and batch.errors[1].startswith("undecodable image: ")
    assert batch.errors[2] is None


def test_a_tables_groups_say_which_keys_each_held_without_listing_a_member():
    keys = [f"k{i:03d}" for i in range(200)]
    groups = group_objects(keys, [FileIdentity(1, 1)] * len(keys), 8)
    ranges = key_ranges(g.name for g in groups)
    leaving = Leaving(ranges=tuple(ranges[g.name] for g in groups))
    for group in groups:
        low, high = ranges[group.name]
        assert [k for k in keys if low <= k and (high is None or k < high)] == keys[group.start:group.end]
    assert ranges[groups[-1].name][1] is None and all(leaving.holds(k) for k in keys)
    assert groups[0].name != LEADING or ranges[LEADING] == ("", groups[1].name.removeprefix("@"))
