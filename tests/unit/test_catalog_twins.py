"""The catalogue's JSON twins: current, read in place of the YAML, and never trusted when stale."""

from __future__ import annotations

import json

import pytest

from smdist.catalog import data_files
from smdist.yaml_text import parse_yaml

SHIPPED = data_files.HERE


def test_every_twin_holds_what_its_yaml_says():
    stale = data_files.stale_twins()
    assert not stale, f"stale JSON twins {stale}: run `{data_files.RECOMPILE}`"


@pytest.mark.parametrize("name", data_files.COMPILED_FILES)
def test_a_current_twin_is_read_instead_of_the_yaml(name, monkeypatch):
    def no_yaml(text):
        raise AssertionError("the YAML was parsed although its twin is current")

    monkeypatch.setattr(data_files, "parse_yaml", no_yaml)
    expected = parse_yaml((SHIPPED / name).read_text(encoding="utf-8"))
    assert data_files.read_data_file(name) == expected


def _copy_catalogue(tmp_path, monkeypatch, name):
    for file in (name, f"{name}.json"):
        (tmp_path / file).write_bytes((SHIPPED / file).read_bytes())
    monkeypatch.setattr(data_files, "HERE", tmp_path)


def test_an_edited_yaml_is_read_and_its_stale_twin_ignored(tmp_path, monkeypatch):
    _copy_catalogue(tmp_path, monkeypatch, "frameworks.yaml")
    yaml_file = tmp_path / "frameworks.yaml"
    text = yaml_file.read_text(encoding="utf-8")
    assert "catalog_date:" in text
    yaml_file.write_text(text.replace("catalog_date:", "catalog_date: '2099-01-01'\nold_date:", 1))
    assert data_files.read_data_file("frameworks.yaml")["catalog_date"] == "2099-01-01"
    monkeypatch.setattr(data_files, "COMPILED_FILES", ("frameworks.yaml",))
    assert data_files.stale_twins() == ["frameworks.yaml"]


@pytest.mark.parametrize("twin", ["", "{not json", json.dumps([1, 2]), '{"data": {}}'])
def test_a_missing_or_damaged_twin_falls_back_to_the_yaml(twin, tmp_path, monkeypatch):
    _copy_catalogue(tmp_path, monkeypatch, "images.yaml")
    (tmp_path / "images.yaml.json").write_text(twin, encoding="utf-8")
    expected = parse_yaml((tmp_path / "images.yaml").read_text(encoding="utf-8"))
    assert data_files.read_data_file("images.yaml") == expected


def test_recompiling_makes_a_stale_twin_current(tmp_path, monkeypatch):
    for name in data_files.COMPILED_FILES:
        _copy_catalogue(tmp_path, monkeypatch, name)
    (tmp_path / "instances.yaml.json").unlink()
    assert data_files.stale_twins() == ["instances.yaml"]
    data_files.compile_all()
    assert data_files.stale_twins() == []
