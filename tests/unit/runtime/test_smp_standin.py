"""The SMP v1 stand-in's pure parts: reading its configuration and cutting microbatches."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import namedtuple

import pytest

from smdist.runtime.smp.config import SMPConfig, SMPConfigError, parse_mp_parameters
from smdist.runtime.smp.microbatches import (
    MicrobatchSplitError,
    StepOutput,
    merge_outputs,
    split_arguments,
    split_value,
)
from smdist.runtime.torch_training import ConfigurationError


class Rows:
    """A batch that slices itself, as SMP's ``smp_slice`` protocol allows."""

    def __init__(self, rows: list) -> None:
        self.rows = rows

    def smp_slice(self, num_mb: int, mb: int, axis: int) -> Rows:
        size = len(self.rows) // num_mb
        return Rows(self.rows[mb * size : (mb + 1) * size])


# --- configuration ----------------------------------------------------------------------


def test_no_parameters_give_the_library_defaults():
    config = parse_mp_parameters(environ={})
    assert config == SMPConfig()
    assert (config.pipeline_parallel_degree, config.microbatches, config.ddp) == (1, 1, False)


def test_parameters_are_read_from_sm_hp_mp_parameters():
    environ = {"SM_HP_MP_PARAMETERS": json.dumps({"microbatches": 4, "ddp": True})}
    config = parse_mp_parameters(environ=environ)
    assert config.microbatches == 4 and config.ddp is True


def test_a_config_argument_wins_over_the_environment():
    environ = {"SM_HP_MP_PARAMETERS": json.dumps({"microbatches": 4})}
    assert parse_mp_parameters({"microbatches": 2}, environ=environ).microbatches == 2


def test_partitions_is_the_older_name_of_pipeline_parallel_degree():
    config = parse_mp_parameters({"partitions": 2})
    assert config.pipeline_parallel_degree == 2
    assert config.model_parallel_degree == 2


def test_partitions_and_pipeline_parallel_degree_must_agree():
    with pytest.raises(SMPConfigError, match="disagree"):
        parse_mp_parameters({"partitions": 2, "pipeline_parallel_degree": 4})


def test_invalid_json_names_the_variable():
    with pytest.raises(SMPConfigError, match="SM_HP_MP_PARAMETERS is not valid JSON"):
        parse_mp_parameters(environ={"SM_HP_MP_PARAMETERS": "{microbatches: 4}"})


def test_a_json_list_is_refused():
    with pytest.raises(SMPConfigError, match="JSON object"):
        parse_mp_parameters("[4]")


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"microbatches": 0}, "microbatches=0 must be an integer >= 1"),
        ({"microbatches": "four"}, "microbatches='four'"),
        ({"microbatches": True}, "microbatches=True"),
        ({"pipeline": "fast"}, "pipeline='fast' must be one of interleaved, simple"),
        ({"optimize": "size"}, "optimize='size' must be one of memory, speed"),
        ({"ddp": "yes"}, "ddp='yes' must be true or false"),
        ({"placement_strategy": "DDP"}, "placement_strategy='DDP'"),
        ({"tensor_parallel_degree": 2}, 'needs "ddp": true'),
        ({"fp16": True, "bf16": True}, "choose one"),
        (
            {"auto_partition": False, "default_partition": 2, "partitions": 2},
            "default_partition=2 must be below pipeline_parallel_degree=2",
        ),
    ],
)
def test_values_the_library_would_refuse_are_refused_with_the_reason(parameters, message):
    with pytest.raises(SMPConfigError, match=message.replace("(", r"\(")):
        parse_mp_parameters(parameters)


def test_config_errors_are_configuration_errors():
    assert issubclass(SMPConfigError, ConfigurationError)


@pytest.mark.parametrize("placement", ["cluster", "spread", "DPT", "TPD", "PTD"])
def test_placement_strategies_include_orderings_of_d_p_t(placement):
    assert parse_mp_parameters({"placement_strategy": placement}).placement_strategy == placement


def test_string_booleans_and_integers_are_accepted():
    config = parse_mp_parameters({"ddp": "true", "microbatches": "8"})
    assert config.ddp is True and config.microbatches == 8


def test_unknown_keys_are_reported_and_documented_ones_kept():
    config = parse_mp_parameters({"microbatchs": 4, "shard_optimizer_state": True})
    assert config.unknown == ("microbatchs",)
    assert config.other == {"shard_optimizer_state": True}


def test_processes_must_split_evenly_into_model_replicas():
    config = parse_mp_parameters({"partitions": 2})
    config.check_world_size(4)
    with pytest.raises(SMPConfigError, match="does not divide the 3 processes"):
        config.check_world_size(3)


def test_sharded_data_parallel_degree_must_divide_the_replicas():
    config = parse_mp_parameters({"sharded_data_parallel_degree": 4})
    config.check_world_size(8)
    with pytest.raises(SMPConfigError, match="sharded_data_parallel_degree=4"):
        config.check_world_size(6)


# --- microbatches -----------------------------------------------------------------------


def test_objects_with_smp_slice_cut_themselves():
    parts = split_value(Rows([1, 2, 3, 4, 5, 6]), 3)
    assert [part.rows for part in parts] == [[1, 2], [3, 4], [5, 6]]


def test_containers_are_split_element_by_element():
    Pair = namedtuple("Pair", "left right")
    value = {"a": [Rows([1, 2]), 7], "b": Pair(Rows([3, 4]), "label")}
    first, second = split_value(value, 2)
    assert first["a"][0].rows == [1] and second["a"][0].rows == [2]
    assert first["a"][1] == 7 == second["a"][1]
    assert isinstance(first["b"], Pair) and first["b"].left.rows == [3]
    assert second["b"].right == "label"


def test_values_that_cannot_be_split_go_to_every_microbatch():
    assert split_value(0.5, 3) == [0.5, 0.5, 0.5]


def test_non_split_inputs_are_passed_whole():
    per_microbatch = split_arguments(
        {"data": Rows([1, 2, 3, 4]), "mask": Rows([9, 9])}, 2, non_split_inputs=["mask"]
    )
    assert [part["data"].rows for part in per_microbatch] == [[1, 2], [3, 4]]
    assert all(part["mask"].rows == [9, 9] for part in per_microbatch)


def test_naming_an_argument_the_call_does_not_have_is_an_error():
    with pytest.raises(MicrobatchSplitError, match=r"\['lables'\]"):
        split_arguments({"labels": 1}, 2, non_split_inputs=["lables"])


def test_microbatches_must_be_at_least_one():
    with pytest.raises(MicrobatchSplitError, match="at least 1"):
        split_arguments({"data": 1}, 0)


def test_merged_outputs_keep_the_structure_and_take_plain_values_from_the_last():
    merged = merge_outputs([{"name": "a", "pair": (1, "x")}, {"name": "b", "pair": (2, "y")}])
    assert merged == {"name": "b", "pair": (2, "y")}


def test_step_output_holds_one_entry_per_microbatch():
    output = StepOutput(["a", "b"])
    assert len(output) == 2 and output.outputs == ["a", "b"]


def test_the_runtime_stand_ins_import_without_torch():
    modules = (
        "smdist.runtime.smp, smdist.runtime.smp.config, smdist.runtime.smp.microbatches, "
        "smdist.runtime.smp_v2, smdist.runtime.smddp, smdist.runtime.torch_training"
    )
    code = f"import sys\nimport {modules}\nprint('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
