"""The maintainer's check of the image catalogue against the DLC repository's release data
(``tests/fixtures/dlc_release``: six of its data files as published on 2026-08-21)."""

from __future__ import annotations

import shutil
from pathlib import Path

from smdist.catalog import dlc_release

CHECKOUT = Path(__file__).parents[1] / "fixtures" / "dlc_release"
TODAY = "2026-11-24"


def test_the_catalogue_agrees_with_the_published_release_data(capsys):
    assert dlc_release.main([str(CHECKOUT), "--today", TODAY]) == 0
    assert "6 published images read" in capsys.readouterr().out


def copy(tmp_path: Path) -> Path:
    shutil.copytree(CHECKOUT, tmp_path / "dlc")
    return tmp_path / "dlc"


def test_a_released_version_the_catalogue_lacks_is_named_with_its_entry(tmp_path, capsys):
    checkout = copy(tmp_path)
    data = checkout / "docs/src/data/pytorch"
    text = (data / "2.13-cuda-sagemaker.yml").read_text().replace("2.13", "2.14")
    (data / "2.14-cuda-sagemaker.yml").write_text(text)
    assert dlc_release.main([str(checkout), "--today", TODAY]) == 1
    out = capsys.readouterr().out
    assert "missing: pytorch 2.14.0 (gpu): add under families.pytorch-training.versions" in out
    assert '"2.14.0-cu133-amzn2023-sagemaker"' in out


def test_a_tag_that_is_not_published_is_named(tmp_path, capsys):
    checkout = copy(tmp_path)
    path = checkout / "docs/src/data/pytorch-training/2.10-gpu-sagemaker.yml"
    path.write_text(path.read_text().replace('  - "2.10.0-gpu-py313"\n', ""))
    assert dlc_release.main([str(checkout), "--today", TODAY]) == 1
    assert "tag: pytorch-training 2.10.0 (gpu): 2.10.0-gpu-py313 is not published" in (
        capsys.readouterr().out
    )


def test_support_ending_is_noticed(capsys):
    assert dlc_release.main([str(CHECKOUT), "--today", "2027-02-01"]) == 1
    out = capsys.readouterr().out
    assert "patched: pytorch-training 2.10.0 (gpu) is past its support on 2027-02-01" in out


def test_a_folder_without_release_data_is_exit_2(tmp_path):
    assert dlc_release.main([str(tmp_path), "--today", TODAY]) == 2
