"""What no training job needs is left out of ``source_dir`` by default, with its reason; smdist's
own local root never ships; a ``!`` rule in ``.smdistignore`` brings a default back."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_packaging import ddp_plan, private_cache, write  # noqa: F401 - the fixture is used by name

from smdist.packaging import bundle as packaging
from smdist.packaging import exclusions as default_exclusions
from smdist.packaging.manifest import build
from smdist.packaging.notice import LARGE_UPLOAD_FILES, large_upload_lines


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root, "train.py", "print('train')\n")
    write(root, "lib/model.py", "X = 1\n")
    return root


def reasons(root: Path) -> dict[str, str]:
    return {item.path: item.reason for item in build(root, use_cache=False).left_out}


def test_smdist_root_by_name_is_never_shipped(project: Path):
    write(project, ".smdist/jobs/old-1/algo-1/code/train.py")
    write(project, ".smdist/jobs/old-1/model.tar.gz")
    found = build(project, use_cache=False)
    assert found.shipped == ["lib/model.py", "train.py"]
    assert found.reason(".smdist/jobs/old-1/model.tar.gz") == default_exclusions.LOCAL_ROOT_REASON


def test_tagged_root_under_another_name_is_never_shipped(project: Path):
    default_exclusions.mark_local_root(project / "runs")
    write(project, "runs/jobs/j/log.txt")
    assert reasons(project)["runs/"] == default_exclusions.LOCAL_ROOT_REASON


@pytest.mark.parametrize("rule", ["!.smdist/", "!runs/", "!**"])
def test_no_ignore_rule_brings_the_local_root_back(project: Path, rule: str):
    write(project, ".smdist/jobs/a/x.py")
    default_exclusions.mark_local_root(project / "runs")
    write(project, "runs/jobs/b/y.py")
    write(project, ".smdistignore", f"{rule}\n")
    write(project, ".gitignore", f"{rule}\n")
    shipped = build(project, use_cache=False).shipped
    assert not [path for path in shipped if path.startswith((".smdist/", "runs/"))], shipped


def test_virtualenvs_are_found_whatever_their_name(project: Path):
    write(project, "env-a/pyvenv.cfg", "home = /usr/bin\n")
    write(project, "env-a/lib/python3.11/site-packages/big.py")
    write(project, "tools/conda/conda-meta/history")
    write(project, "tools/conda/bin/python")
    write(project, ".venv/bin/activate")
    found = reasons(project)
    assert found["env-a/"] == "left out by default: a virtualenv (pyvenv.cfg)"
    assert found["tools/conda/"] == "left out by default: a conda environment (conda-meta/)"
    assert found[".venv/"] == "left out by default: a virtualenv"


@pytest.mark.parametrize(
    "path",
    [
        ".ipynb_checkpoints/nb-checkpoint.ipynb",
        "notebooks/.ipynb_checkpoints/a.ipynb",
        ".pytest_cache/v/cache/lastfailed",
        ".mypy_cache/3.11/x.json",
        ".ruff_cache/0.1/x",
        ".tox/py311/lib/x.py",
        ".nox/tests/x.py",
        ".cache/huggingface/x.bin",
        "build/tagged/x.bin",
        ".DS_Store",
        "data/.DS_Store",
        "data/._train.csv",
        "Thumbs.db",
    ],
)
def test_what_no_job_needs_is_left_out_by_default(project: Path, path: str):
    write(project, path)
    if path.startswith("build/tagged/"):
        write(project, "build/tagged/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")
    found = build(project, use_cache=False)
    assert path not in found.shipped
    why = found.reason(path)
    assert why and why.startswith("left out by default: "), why


def test_smdistignore_bang_rule_brings_a_default_back(project: Path):
    write(project, ".cache/tokenizer.json", "{}")
    write(project, "env/pyvenv.cfg")
    write(project, "env/wheel.whl")
    write(project, ".smdistignore", "!.cache/\n!env/\n")
    shipped = build(project, use_cache=False).shipped
    assert ".cache/tokenizer.json" in shipped
    assert "env/wheel.whl" in shipped


def test_gitignore_bang_rule_does_not_bring_a_default_back(project: Path):
    write(project, ".cache/tokenizer.json", "{}")
    write(project, ".gitignore", "!.cache/\n")
    assert ".cache/tokenizer.json" not in build(project, use_cache=False).shipped


def test_an_ignore_rule_still_names_its_file(project: Path):
    write(project, ".venv/pyvenv.cfg")
    write(project, ".gitignore", ".venv/\n")
    assert reasons(project)[".venv/"] == "ignored by .gitignore"


def test_bang_rule_cannot_bring_a_secret_back_even_beside_a_default(project: Path):
    write(project, ".cache/.netrc", "machine x login y password z")
    write(project, ".smdistignore", "!.cache/\n!.netrc\n")
    found = build(project, use_cache=False)
    assert ".cache/.netrc" not in found.shipped
    assert ".cache/.netrc" in found.secrets


def test_large_upload_is_announced_with_its_largest_directories(project: Path):
    for index in range(LARGE_UPLOAD_FILES):
        write(project, f"data/part-{index // 1000}/{index}.txt", "1")
    lines = large_upload_lines(build(project, use_cache=False))
    assert lines[0].startswith(f"note: large code upload: {LARGE_UPLOAD_FILES + 2} files")
    assert lines[1].split()[0] == "data/"
    assert ".smdistignore" in lines[-1]


def test_small_upload_is_not_announced(project: Path):
    assert large_upload_lines(build(project, use_cache=False)) == []


def test_dry_run_lines_show_each_default_with_its_reason(project: Path):
    write(project, ".venv/pyvenv.cfg")
    write(project, ".ipynb_checkpoints/a.ipynb")
    write(project, ".smdist/jobs/a/model.tar.gz")
    lines = packaging.dry_run_lines(ddp_plan(project))
    text = "\n".join(lines)
    assert ".venv/" in text and "left out by default: a virtualenv (pyvenv.cfg)" in text
    assert ".ipynb_checkpoints/  left out by default: notebook checkpoints" in text
    assert ".smdist/" in text and default_exclusions.LOCAL_ROOT_REASON in text
    assert "'!' rule in .smdistignore" in text


def test_a_cache_brought_back_still_keeps_its_secrets(project: Path):
    write(project, ".cache/huggingface/token", "hf_" + "a" * 34)
    write(project, ".cache/huggingface/hub/model.bin")
    write(project, ".smdistignore", "!.cache/\n")
    found = build(project, use_cache=False)
    assert ".cache/huggingface/hub/model.bin" in found.shipped
    assert found.secrets == [".cache/huggingface/token"]


def test_readme_lists_every_default_exclusion():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme[readme.index("**Left out by default**") : readme.index("**Large uploads")]
    for name in default_exclusions.DEFAULT_DIRECTORIES:
        assert f"`{name}/`" in section, name
    for name in [*default_exclusions.DEFAULT_FILES, "._*", "pyvenv.cfg", "conda-meta/"]:
        assert f"`{name}`" in section, name
