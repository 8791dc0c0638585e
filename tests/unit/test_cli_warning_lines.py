"""A warning is one line wherever stderr goes: CI logs and ``grep warning:`` see it whole."""

from __future__ import annotations

from cli_process import run_smdist

PAST_SUPPORT = """
name: old-image
strategy: {kind: mwms}
cluster: {instance_type: ml.c5.xlarge, instance_count: 2}
code: {framework_version: "2.14", py_version: py310}
"""


def test_validate_keeps_a_long_warning_on_one_line_in_a_pipe(tmp_path, monkeypatch):
    (tmp_path / "job.yaml").write_text(PAST_SUPPORT)
    monkeypatch.setenv("COLUMNS", "60")  # a narrow terminal's width, as a pipe inherits it
    done = run_smdist("validate", "job.yaml", cwd=tmp_path, without_aws=True)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    past_support = [line for line in warnings if "past its support" in line]
    assert past_support and past_support[0].endswith("valid: the newest supported, 2.21.0"), (
        done.stderr
    )
    assert len(done.stderr.splitlines()) == len(warnings), done.stderr
