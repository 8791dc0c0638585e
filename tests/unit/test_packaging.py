"""What a job ships: ignore rules, secrets never leaving the machine, deterministic tarballs."""

from __future__ import annotations

import compileall
import hashlib
import importlib.util
import json
import os
import py_compile
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from smdist.errors import SpecError
from smdist.packaging import bundle as packaging
from smdist.packaging import tarball
from smdist.planning.plan import plan
from smdist.spec.job import JobSpec

SECRETS = [
    ".env",
    ".env.production",
    "server.pem",
    "tls/private.key",
    "id_rsa",
    "keys/id_ed25519.pub",
    "keys/id_ecdsa",
    ".aws/credentials",
    ".aws/config",
    "credentials.json",
    "conf/credentials",
    ".git/config",
    ".netrc",
    ".ssh/config",
    "service-account.json",
    "__pycache__/train.cpython-311.pyc",
    "lib/helper.pyc",
]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def write(root: Path, relative: str, text: str = "x") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def ddp_plan(source_dir: Path | None, launcher: str = "torchrun", entry_point="train.py"):
    code = {} if source_dir is None else {"source_dir": str(source_dir), "entry_point": entry_point}
    return plan(
        JobSpec.from_dict(
            {
                "name": "pack-test",
                "strategy": {"kind": "pytorch_ddp", "launcher": launcher},
                "cluster": {"instance_type": "ml.g5.12xlarge", "instance_count": 2},
                "code": {
                    **code,
                    "framework_version": "2.3.0",
                    "py_version": "py311",
                    # packaging does not depend on the container catalogue
                    "image_uri": "111122223333.dkr.ecr.us-west-2.amazonaws.com/train:1",
                },
            }
        )
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root, "train.py", "print('train')\n")
    write(root, "lib/model.py", "X = 1\n")
    for secret in SECRETS:
        write(root, secret, "AKIAABCDEFGHIJKLMNOP")
    return root


def test_secrets_are_never_listed(project: Path):
    assert packaging.source_files(project) == ["lib/model.py", "train.py"]


def test_code_that_merely_starts_with_id_is_shipped(project: Path):
    write(project, "id_mapping.py", "MAPPING = {}\n")
    assert "id_mapping.py" in packaging.source_files(project)


def test_content_secret_under_an_innocent_name_is_not_listed(project: Path):
    write(project, "notes.txt", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "b3BlbnNzaC1r" * 8 + "\n")
    assert "notes.txt" not in packaging.source_files(project)
    assert "notes.txt" in packaging.excluded_secrets(project)


def test_manifest_gives_a_reason_for_each_left_out_path(project: Path):
    found = packaging.manifest(project)
    assert found.shipped == packaging.source_files(project)
    assert found.reason(".netrc") == "secret by name: .netrc"
    assert found.reason(".git/config") == "never shipped: .git/"
    assert found.reason("lib/helper.pyc") == "never shipped: bytecode"
    assert found.shipped_bytes == sum((project / f).stat().st_size for f in found.shipped)


def test_negated_ignore_rule_cannot_bring_a_secret_back(project: Path):
    write(project, ".smdistignore", "!.env\n!*.pem\n!.aws/\n")
    assert ".env" not in packaging.source_files(project)
    assert "server.pem" not in packaging.source_files(project)


def test_gitignore_and_smdistignore_are_honoured(project: Path):
    write(project, ".gitignore", "data/\n*.ckpt\n")
    write(project, ".smdistignore", "notebooks/\n")
    write(project, "data/big.bin")
    write(project, "model.ckpt")
    write(project, "notebooks/explore.ipynb")
    files = packaging.source_files(project)
    assert files == [".gitignore", ".smdistignore", "lib/model.py", "train.py"]


def test_nested_gitignore_applies_below_its_directory_only(project: Path):
    write(project, "lib/.gitignore", "*.tmp\n!keep.tmp\n")
    write(project, "lib/a.tmp")
    write(project, "lib/keep.tmp")
    write(project, "top.tmp")
    files = packaging.source_files(project)
    assert "lib/a.tmp" not in files
    assert "lib/keep.tmp" in files
    assert "top.tmp" in files


def test_symlink_out_of_source_dir_is_not_followed(project: Path, tmp_path: Path):
    outside = write(tmp_path / "home", "secret.txt", "private")
    (project / "innocent.txt").symlink_to(outside)
    (project / "linked_dir").symlink_to(outside.parent, target_is_directory=True)
    (project / "alias.py").symlink_to(project / "train.py")
    files = packaging.source_files(project)
    assert "innocent.txt" not in files
    assert not any(f.startswith("linked_dir") for f in files)
    assert "alias.py" in files


def test_missing_source_dir_is_a_spec_error(tmp_path: Path):
    with pytest.raises(SpecError, match="code.source_dir"):
        packaging.source_files(tmp_path / "nope")


def test_bundle_adds_runtime_stub_and_launcher(project: Path):
    entries = dict((arc, src) for src, arc in packaging.bundle(ddp_plan(project)))
    assert "train.py" in entries and "lib/model.py" in entries
    assert "launch_torchrun.py" in entries
    assert "smdist/__init__.py" in entries
    assert "smdist/runtime/__init__.py" in entries
    assert "smdist/runtime/launcher.py" in entries
    assert "smdist/contract/commands.py" in entries
    # Only the runtime and the container contract travel: nothing that imports pydantic.
    assert not any(
        a.startswith("smdist/") and not a.startswith(("smdist/runtime/", "smdist/contract/"))
        for a in entries
        if a not in ("smdist/__init__.py", "smdist/launch.json")
    )
    # The plan's launch travels with the code, resolved: the launcher reads its counts there.
    shipped = json.loads(entries["smdist/launch.json"].read_text())
    assert shipped == ddp_plan(project).launch.to_dict()
    assert isinstance(shipped["processes_per_host"], int)
    stub = entries["smdist/__init__.py"].read_text()
    assert "runtime-only bundle" in stub
    assert not any(a.endswith(".pyc") or "__pycache__" in a for a in entries)


def test_bundle_keeps_the_users_launcher(project: Path):
    write(project, "launch_torchrun.py", "# mine\n")
    entries = dict((arc, src) for src, arc in packaging.bundle(ddp_plan(project)))
    assert entries["launch_torchrun.py"] == (project / "launch_torchrun.py").resolve()


def test_bundle_without_launcher_for_torch_distributed(project: Path):
    arcs = [a for _, a in packaging.bundle(ddp_plan(project, launcher="torch_distributed"))]
    assert "launch_torchrun.py" not in arcs


@pytest.mark.smoke
def test_bundle_of_ready_entry_points():
    arcs = [a for _, a in packaging.bundle(ddp_plan(None))]
    assert "launch_torchrun.py" in arcs
    assert "__init__.py" not in arcs
    assert "smdist/runtime/args.py" in arcs


def test_missing_entry_point_is_a_spec_error(project: Path):
    with pytest.raises(SpecError, match="code.entry_point"):
        packaging.bundle(ddp_plan(project, entry_point="missing.py"))


def test_ignored_entry_point_is_a_spec_error(project: Path):
    write(project, ".smdistignore", "train.py\n")
    with pytest.raises(SpecError, match="left out of .*: ignored by .smdistignore"):
        packaging.bundle(ddp_plan(project))


def test_stage_copies_the_bundle(project: Path, tmp_path: Path):
    code_dir = tmp_path / "opt/ml/code"
    names = packaging.stage(ddp_plan(project), code_dir)
    assert sorted(
        str(p.relative_to(code_dir)) for p in code_dir.rglob("*") if p.is_file()
    ) == sorted(names)
    assert (code_dir / "train.py").read_text() == "print('train')\n"


def test_local_stage_gives_the_runtime_its_bytecode_and_the_user_code_none(
    project: Path, tmp_path: Path
):
    """A local host's Python loads smdist's runtime from the bytecode this installation
    compiled (PYTHONDONTWRITEBYTECODE, as in the images, would make it compile every time);
    the user's files get none, and the file list is the bundle's alone."""
    compileall.compile_dir(packaging.runtime_dir(), quiet=1)
    code_dir = tmp_path / "opt/ml/code"
    names = packaging.stage(ddp_plan(project), code_dir, bytecode=True)
    staged_pyc = sorted(p.relative_to(code_dir).as_posix() for p in code_dir.rglob("*.pyc"))
    assert staged_pyc and all(
        name.startswith("smdist/runtime/") or name.startswith("smdist/contract/")
        for name in staged_pyc
    )
    assert not any(name.endswith(".pyc") for name in names)
    loaded = subprocess.run(
        [sys.executable, "-v", "-c", "import smdist.runtime.launcher as m; print(m.__file__)"],
        cwd=code_dir,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(code_dir)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == str(code_dir / "smdist/runtime/launcher.py")
    launcher_pyc = importlib.util.cache_from_source(str(code_dir / "smdist/runtime/launcher.py"))
    assert f"code object from '{launcher_pyc}'" in loaded.stderr
    # A module edited after its bytecode was compiled is not given that stale bytecode.
    module = write(tmp_path / "pkg", "mod.py", "X = 1\n")
    py_compile.compile(str(module))
    target = write(tmp_path / "staged", "mod.py", "X = 1\n")
    assert packaging.runtime_bytecode(module, target)
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 10**9))
    target.unlink()
    target = write(tmp_path / "staged2", "mod.py", "X = 1\n")
    assert not packaging.runtime_bytecode(module, target)
    assert not Path(importlib.util.cache_from_source(str(target))).exists()


def test_pack_is_deterministic(project: Path, tmp_path: Path):
    first = packaging.pack(ddp_plan(project), tmp_path / "a")
    os.utime(project / "train.py", (1, 1))  # touching a file changes no byte of the tarball
    second = packaging.pack(ddp_plan(project), tmp_path / "b")
    assert first.sha256 == second.sha256
    assert first.path.read_bytes() == second.path.read_bytes()
    assert hashlib.sha256(first.path.read_bytes()).hexdigest() == first.sha256
    assert first.size == first.path.stat().st_size


def test_pack_changes_with_content(project: Path, tmp_path: Path):
    first = packaging.pack(ddp_plan(project), tmp_path / "a")
    write(project, "lib/model.py", "X = 2\n")
    assert packaging.pack(ddp_plan(project), tmp_path / "b").sha256 != first.sha256


def test_tarball_has_fixed_metadata_and_no_secrets(project: Path, tmp_path: Path):
    package = packaging.pack(ddp_plan(project), tmp_path)
    with tarfile.open(package.path, "r:gz") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names) == package.files
    assert not set(SECRETS) & set(names)
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {
        (0, 0, "", "", tarball._FIXED_MTIME)
    }


def test_excluded_secrets_are_reported(project: Path):
    found = packaging.excluded_secrets(project)
    assert ".env" in found and ".aws/credentials" in found and "id_rsa" in found
    assert "lib/helper.pyc" not in found and ".git/config" not in found


def test_content_digest_follows_content_not_timestamps(project: Path):
    entries = packaging.bundle(ddp_plan(project))
    digest = packaging.content_digest(entries)
    os.utime(project / "train.py", (1, 1))
    assert packaging.content_digest(packaging.bundle(ddp_plan(project))) == digest
    (project / "train.py").chmod(0o755)
    assert packaging.content_digest(packaging.bundle(ddp_plan(project))) != digest
    (project / "train.py").chmod(0o644)
    write(project, "train.py", "print('changed')\n")
    assert packaging.content_digest(packaging.bundle(ddp_plan(project))) != digest


def test_content_digest_ignores_entry_order(project: Path):
    entries = packaging.bundle(ddp_plan(project))
    assert packaging.content_digest(entries) == packaging.content_digest(entries[::-1])
