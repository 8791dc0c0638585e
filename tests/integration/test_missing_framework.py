"""A job whose Python lacks the framework smdist's own parts need is refused with exit 2, before
anything starts; a user's own script under a plain launcher is never refused for one.

The Python without torch is a real virtualenv: the base interpreter's, without site-packages,
given smdist and its dependencies (links to this environment's copies) but not torch.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from local_jobs import EXAMPLES, REPO, assert_nothing_left, clean_environ

import smdist
from smdist.backends.local import PrepareError

# One worker runs the whole module, so the torch-less virtualenv is made once (xdist).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("missing_framework")]


def _requirements(name: str) -> list[metadata.Distribution]:
    """``name``'s distribution and those it needs (extras left out), installed here."""
    found: dict[str, metadata.Distribution] = {}
    todo = [name]
    while todo:
        try:
            dist = metadata.distribution(todo.pop())
        except metadata.PackageNotFoundError:
            continue  # a requirement for another Python version
        key = dist.metadata["Name"].lower()
        if key not in found:
            found[key] = dist
            todo += [
                re.split(r"[ ;<>=!~\[(]", requirement, maxsplit=1)[0]
                for requirement in dist.requires or []
                if "extra ==" not in requirement
            ]
    return list(found.values())


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory) -> str:
    """A virtualenv with smdist (this checkout) and its dependencies, and no torch."""
    root = tmp_path_factory.mktemp("venv")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    for dist in _requirements("smdist"):
        if dist.metadata["Name"].lower() == "smdist":
            continue  # this checkout, below
        tops = {Path(str(file)).parts[0] for file in dist.files or []}
        for top in tops - {"..", "__pycache__"}:
            if top.endswith((".dist-info", ".pth")) or (site / top).exists():
                continue
            (site / top).symlink_to(dist.locate_file(top))
    (site / "smdist-checkout.pth").write_text(f"{REPO}\n")
    probe = subprocess.run([str(python), "-c", "import smdist.cli.app, typer; import torch"])
    if probe.returncode == 0:
        pytest.skip(f"{base} has torch: no Python without it to test with")
    assert subprocess.run([str(python), "-c", "import smdist.cli.app"]).returncode == 0
    return str(python)


def test_smdist_run_without_torch_exits_2_before_starting_anything(python_without_torch, tmp_path):
    root = tmp_path / ".smdist"
    run = subprocess.run(
        [
            python_without_torch,
            "-m",
            "smdist.cli.app",
            "run",
            str(EXAMPLES / "pytorch_ddp.yaml"),
            "--root",
            str(root),
        ],  # fmt: skip
        cwd=tmp_path,
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    said = " ".join(run.stderr.split())  # the console wraps long lines
    assert "torch is not installed for the Python that runs the job" in said
    assert "smdist's torchrun launcher runs torchrun on every host" in said
    assert f"{python_without_torch} -m pip install torch" in said
    assert "Traceback" not in run.stderr
    assert not (root / "jobs").exists()  # no host prepared, no process started
    assert_nothing_left(tmp_path)


def test_a_job_run_by_a_python_without_torch_is_refused_naming_it(python_without_torch, tmp_path):
    spec = smdist.load(EXAMPLES / "pytorch_ddp.yaml")
    root = tmp_path / ".smdist"
    with pytest.raises(PrepareError, match="torch is not installed") as refused:
        smdist.fit(spec, options={"python": python_without_torch, "root": str(root)})
    assert python_without_torch in str(refused.value)
    assert not (root / "jobs").exists()


def test_a_users_own_script_under_a_plain_launcher_needs_no_framework(
    python_without_torch, tmp_path
):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(
        textwrap.dedent(
            """
            import os
            print(f"plain script on {os.environ['SM_CURRENT_HOST']}", flush=True)
            """
        )
    )
    job = smdist.fit(
        name="plain",
        strategy=smdist.MWMS(),
        cluster=smdist.Cluster(instance_type="ml.c5.xlarge", instance_count=2),
        code=smdist.Code(source_dir=str(source), entry_point="train.py"),
        logs=False,
        options={"python": python_without_torch, "root": str(tmp_path / ".smdist")},
    )
    assert job.wait(timeout=120).value == "Completed", job.failure_reason
    assert sorted(line for line in job.logs() if "plain script on" in line) == [
        "algo-1     | plain script on algo-1",
        "algo-2     | plain script on algo-2",
    ]
    assert_nothing_left(tmp_path)
