"""The SMP v2 stand-in's configuration rules and the FSDP mesh hybrid_shard_degree describes."""

from __future__ import annotations

import json

import pytest

from smdist.runtime.smp_v2 import SMPv2Config, SMPv2ConfigError, mesh_shape, parse_v2_config


def test_no_parameters_give_the_defaults():
    assert parse_v2_config(environ={}) == SMPv2Config()


def test_parameters_are_read_from_sm_hp_mp_parameters():
    environ = {"SM_HP_MP_PARAMETERS": json.dumps({"hybrid_shard_degree": 2, "random_seed": 7})}
    config = parse_v2_config(environ=environ)
    assert (config.hybrid_shard_degree, config.random_seed) == (2, 7)


def test_a_json_file_path_is_read(tmp_path):
    path = tmp_path / "smp.json"
    path.write_text(json.dumps({"hybrid_shard_degree": 4}))
    assert parse_v2_config(str(path)).hybrid_shard_degree == 4


def test_unknown_keys_are_reported():
    assert parse_v2_config({"hybrid_shard_dgree": 2}).unknown == ("hybrid_shard_dgree",)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{", "not valid JSON"),
        ({"hybrid_shard_degree": -1}, "hybrid_shard_degree=-1"),
        ({"tensor_parallel_degree": 0}, "tensor_parallel_degree=0"),
        ({"random_seed": "x"}, "random_seed='x'"),
    ],
)
def test_malformed_values_are_refused(config, message):
    with pytest.raises(SMPv2ConfigError, match=message):
        parse_v2_config(config)


def test_hybrid_shard_degree_must_lie_within_the_world_and_divide_it():
    parse_v2_config({"hybrid_shard_degree": 4}).check_world_size(8)
    with pytest.raises(SMPv2ConfigError, match="between 0 and the world size 2"):
        parse_v2_config({"hybrid_shard_degree": 4}).check_world_size(2)
    with pytest.raises(SMPv2ConfigError, match="does not divide the world size 6"):
        parse_v2_config({"hybrid_shard_degree": 4}).check_world_size(6)


def test_parallel_degrees_above_one_need_the_real_library():
    with pytest.raises(SMPv2ConfigError, match="tensor_parallel_degree=2 needs SageMaker's SMP"):
        parse_v2_config({"tensor_parallel_degree": 2}).check_runs_locally()
    parse_v2_config({"hybrid_shard_degree": 2}).check_runs_locally()


@pytest.mark.parametrize(
    ("degree", "world", "shape"),
    [(0, 4, (4,)), (4, 4, (4,)), (1, 4, (4, 1)), (2, 8, (4, 2))],
)
def test_the_mesh_shards_within_groups_and_replicates_across_them(degree, world, shape):
    assert mesh_shape(degree, world) == shape
