"""Every command the docs show runs as written on a fresh copy of the repository, or is skipped for a named reason.

The docs are README.md, BENCHMARKS.md and docs/*.md (``tests.docs.doc_commands``); what happens to each
command, and how a run is made offline and CI-sized, is ``tests.docs.verdicts``. The commands marked
slow (compare, the benchmarks) run with ``-m slow``: ``bash scripts/test.sh -m slow tests/docs``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from tests.common.images import encoded, photo
from tests.docs.doc_commands import REPO, doc_commands
from tests.docs.verdicts import RUNS, SKIPS, Run, Skip, verdict

COMMAND_TIMEOUT_S = 900
BUCKETS = ("my-bucket", "bucket")  # the docs' S3 examples
IMAGENET_FILE = "resnet50-11ad3fa6.pth"  # where torch.hub caches inference.weights.IMAGENET_URL


def test_every_documented_command_has_a_verdict():
    """A command line added to a doc fails here until tests/docs/verdicts.py says to run or skip it (and why)."""
    missing = [str(c) for c in doc_commands() if verdict(c.text) is None]
    assert not missing, "classify in tests/docs/verdicts.py:\n" + "\n".join(missing)


def test_every_verdict_is_of_a_command_the_docs_still_show():
    shown = {c.text for c in doc_commands()}
    stale = [text for text in [*RUNS, *SKIPS] if text not in shown]
    assert not stale, "no longer in the docs; drop from tests/docs/verdicts.py:\n" + "\n".join(stale)


def test_what_is_skipped_says_why():
    assert all(isinstance(verdict(c.text), (Run, Skip)) and (isinstance(verdict(c.text), Run) or verdict(c.text).reason)
               for c in doc_commands())


class DocShell:
    """A fresh copy of the repository where a user follows the docs: its virtualenv activated, S3 and weights offline."""

    def __init__(self, root: Path, s3_endpoint: str) -> None:
        self.root, self.repo, self.done = root, root / "repo", set()
        self.env = self._environment(s3_endpoint)

    def copy_repository(self) -> None:
        """What a clone holds (tracked files, and new ones not ignored), committed, so changes to it show."""
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                                capture_output=True, check=True).stdout.decode().split("\0")
        for name in filter(None, listed):
            if (REPO / name).is_file():
                (self.repo / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, self.repo / name)
        (self.repo / ".venv").symlink_to(Path(sys.prefix))  # CI's virtualenv, as the README's .venv
        git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.com"]
        subprocess.run([*git, "init", "-q"], cwd=self.repo, check=True)
        (self.repo / ".git" / "info" / "exclude").write_text("/.venv\n")
        subprocess.run([*git, "add", "-A"], cwd=self.repo, check=True)
        subprocess.run([*git, "commit", "-qm", "fresh copy"], cwd=self.repo, check=True)

    def _environment(self, s3_endpoint: str) -> dict[str, str]:
        home, torch_home = self.root / "home", self.root / "torch"
        venv_bin = str(Path(sys.prefix) / "bin")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RAY_ADDRESS", "PYSPARK_"))}
        env.update(HOME=str(home), TORCH_HOME=str(torch_home), VIRTUAL_ENV=sys.prefix, AWS_ENDPOINT_URL=s3_endpoint,
                   PATH=os.pathsep.join([venv_bin, env.get("PATH", "")]), PYTHONPATH=str(self.repo))
        return env

    def prepare_home_and_weights(self) -> None:
        """~/Pictures with three photos; torchvision's ImageNet file for ResNet50, seeded (nothing to download)."""
        import torch

        from inference.resnet import ResNet50

        pictures = self.root / "home" / "Pictures"
        pictures.mkdir(parents=True)
        for seed, name in enumerate(("cat.jpg", "dog.jpg", "trip/beach.jpg")):
            (pictures / name).parent.mkdir(parents=True, exist_ok=True)
            (pictures / name).write_bytes(encoded(photo(seed=seed)))
        checkpoints = self.root / "torch" / "hub" / "checkpoints"
        checkpoints.mkdir(parents=True)
        torch.manual_seed(0)
        torch.save(ResNet50().state_dict(), checkpoints / IMAGENET_FILE)

    def run(self, text: str) -> str:
        """Run a documented command (its needs first, once each); returns its output."""
        plan = RUNS[text]
        for need in plan.needs:
            if need not in self.done:
                self.run(need)
        if plan.before:
            self._bash(plan.before, {})
        command = text
        for old, new in plan.small.items():
            command = command.replace(old, new)
        output = self._bash(command.replace("/tmp/", f"{self.root}/tmp/"), plan.env)
        self.done.add(text)
        if plan.expect:
            assert plan.expect in output, f"{text}\n{output[-3000:]}"
        shown = [word for word in plan.absent if word in output]
        assert not shown, f"{text}: {shown}\n{output[-3000:]}"
        return output

    def _bash(self, command: str, env: dict[str, str]) -> str:
        result = subprocess.run(["bash", "-c", command], cwd=self.repo, env={**self.env, **env}, capture_output=True,
                                text=True, timeout=COMMAND_TIMEOUT_S)
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"exit code {result.returncode}: {command}\n{output[-3000:]}"
        assert "Traceback" not in output, f"{command}\n{output[-3000:]}"
        return output


@pytest.fixture(scope="module")
def shell(tmp_path_factory, s3_endpoint) -> DocShell:
    shell = DocShell(tmp_path_factory.mktemp("docs"), s3_endpoint)
    (shell.root / "tmp").mkdir()
    shell.repo.mkdir()
    shell.copy_repository()
    shell.prepare_home_and_weights()
    s3 = boto3.client("s3", endpoint_url=s3_endpoint)
    for bucket in BUCKETS:
        s3.create_bucket(Bucket=bucket)
    return shell


@pytest.mark.parametrize("text", [pytest.param(text, marks=[pytest.mark.slow] if plan.slow else [], id=text[:90])
                                  for text, plan in RUNS.items()])
def test_documented_command_runs(shell, text):
    shell.run(text)


def test_following_the_docs_changes_no_file_of_the_repository(shell):
    """Outputs land where the commands say (./my-images, /tmp/...), never in a tracked file (benchmark rows were)."""
    changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=shell.repo, capture_output=True,
                             text=True, check=True).stdout
    assert changed == "", changed
