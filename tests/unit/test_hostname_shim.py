"""The PyTorch images' host-name fix, which smdist's v3 driver applies because v3's ``/bin/bash``
entry point skips the image's own entry script: compiled from the DLC's real source, preloaded
into a real process, ``gethostname()`` answers the host's SageMaker name."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smdist.contract import hostname_shim
from smdist.runtime import v3_driver

SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "dlc_hostname" / "changehostname.c"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc to compile the shim")
ASK = "import socket; print(socket.gethostname())"


@needs_gcc
def test_the_compiled_library_makes_gethostname_answer_the_host_name(tmp_path):
    library = hostname_shim.build_dlc_shim("algo-2", source=SOURCE, build_dir=tmp_path)
    assert library is not None
    preloaded = subprocess.run(
        [sys.executable, "-c", ASK], env={"LD_PRELOAD": library}, capture_output=True, text=True
    )
    plain = subprocess.run([sys.executable, "-c", ASK], capture_output=True, text=True)
    assert preloaded.stdout.strip() == "algo-2", preloaded.stderr
    assert plain.stdout.strip() != "algo-2"


def test_no_source_or_an_odd_name_builds_nothing(tmp_path):
    assert hostname_shim.build_dlc_shim("algo-1", source=tmp_path / "absent.c") is None
    odd = 'algo-1"; system("id'
    assert hostname_shim.build_dlc_shim(odd, source=SOURCE, build_dir=tmp_path) is None


@needs_gcc
def test_the_driver_preloads_it_for_the_job_and_hands_it_to_the_mpi_ranks(tmp_path, monkeypatch):
    monkeypatch.setattr(hostname_shim, "DLC_SOURCE", SOURCE)
    monkeypatch.setattr(hostname_shim, "BUILD_DIR", tmp_path)
    monkeypatch.setattr(v3_driver, "toolkit_shim", lambda: None)  # an image without the toolkit
    env = {"LD_PRELOAD": "/opt/other.so"}
    library = v3_driver.apply_hostname_fix(env, "algo-3")
    assert library == str(tmp_path / "libchangehostname.so")
    assert env["LD_PRELOAD"] == f"{library}:/opt/other.so"  # as the DLC's entry script does


def test_an_image_without_either_fix_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(hostname_shim, "DLC_SOURCE", tmp_path / "absent.c")
    monkeypatch.setattr(v3_driver, "toolkit_shim", lambda: None)
    env: dict[str, str] = {}
    assert v3_driver.apply_hostname_fix(env, "algo-1") is None
    assert env == {}
