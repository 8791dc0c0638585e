"""The stand-ins and the shared training loop, with real torch in a one-rank process group.

Two-rank behaviour is covered by test_torch_entry_points.py; these tests pin down what one
rank can show exactly: microbatch gradients, StepOutput arithmetic, the rules the stand-ins
enforce, and when the training loop stops, logs and checkpoints.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

from smdist.backends.local.hosts.shared.ports import free_ports
from smdist.runtime.smp import api as smp
from smdist.runtime.smp.microbatches import MicrobatchSplitError, split_value
from smdist.runtime.torch_training import (
    ConfigurationError,
    LoopSettings,
    build_classifier,
    run_training,
    synthetic_classification,
    weights_checksum,
)
from smdist.runtime.torch_training.loop import FIRST_AGREEMENT_STEPS, MAX_AGREEMENT_INTERVAL

# One worker runs the whole module: its one-rank process group lives in that worker (xdist).
pytestmark = [
    pytest.mark.integration,
    pytest.mark.torch,
    pytest.mark.xdist_group("torch_standins"),
]
MICROBATCHES = 4


def _free_port() -> int:
    return free_ports(1)[0]


@pytest.fixture(scope="module")
def one_rank_smp():
    """``smp.init`` in this process: a one-rank gloo group, torn down after the module."""
    import torch.distributed as dist

    saved = {key: os.environ.get(key) for key in smp_rendezvous_keys()}
    for key in saved:
        os.environ.pop(key, None)
    os.environ["MASTER_PORT"] = str(_free_port())
    smp.init({"microbatches": MICROBATCHES, "ddp": True})
    yield smp
    dist.destroy_process_group()
    smp.state = type(smp.state)()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def smp_rendezvous_keys() -> tuple[str, ...]:
    return ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def fresh_model(one_rank_smp):
    one_rank_smp.state.model = None
    torch.manual_seed(0)
    plain = build_classifier(8, 3, hidden=16)
    copy = build_classifier(8, 3, hidden=16)
    copy.load_state_dict(plain.state_dict())
    yield one_rank_smp.DistributedModel(copy), plain
    one_rank_smp.state.model = None


def test_tensors_split_along_the_batch_axis():
    parts = split_value(torch.arange(12).reshape(6, 2), 3)
    assert [part.tolist() for part in parts] == [
        [[0, 1], [2, 3]],
        [[4, 5], [6, 7]],
        [[8, 9], [10, 11]],
    ]
    columns = split_value(torch.arange(8).reshape(2, 4), 2, axis=1)
    assert columns[1].tolist() == [[2, 3], [6, 7]]


def test_a_batch_that_does_not_divide_names_the_argument_and_the_fix():
    with pytest.raises(
        MicrobatchSplitError, match=r"argument 'data' has size 10 .* microbatches=4"
    ):
        split_value(torch.zeros(10, 3), 4, where="argument 'data'")
    with pytest.raises(MicrobatchSplitError, match="0-dimensional"):
        split_value(torch.tensor(1.0), 2)


def test_microbatch_gradients_equal_the_full_batch_gradients(fresh_model):
    model, plain = fresh_model
    data = torch.randn(8, 8)
    target = torch.randint(0, 3, (8,))

    @smp.step
    def train_step(model, data, target):
        loss = torch.nn.functional.cross_entropy(model(data), target)
        model.backward(loss)
        return loss

    losses = train_step(model, data, target)
    torch.nn.functional.cross_entropy(plain(data), target).backward()

    assert len(losses.outputs) == MICROBATCHES
    for ours, reference in zip(model.module.parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(ours.grad, reference.grad)
    # Equal microbatches: the mean of their mean losses is the batch's mean loss.
    expected = torch.nn.functional.cross_entropy(plain(data), target)
    torch.testing.assert_close(losses.reduce_mean(), expected.detach())


def test_step_outputs_combine_microbatch_tensors(fresh_model):
    model, _ = fresh_model

    @smp.step
    def predict(model, data):
        return model(data)

    with torch.no_grad():
        outputs = predict(model, torch.randn(8, 8))
    assert outputs.concat().shape == (8, 3)
    assert outputs.stack().shape == (MICROBATCHES, 2, 3)
    torch.testing.assert_close(outputs.reduce_sum(), outputs.stack().sum(0))


def test_the_model_and_its_backward_work_only_inside_a_step(fresh_model):
    model, _ = fresh_model
    with pytest.raises(RuntimeError, match="only inside an @smp.step"):
        model(torch.randn(4, 8))
    with pytest.raises(RuntimeError, match="only inside an @smp.step"):
        model.backward(torch.tensor(1.0))


def test_only_one_model_per_job(fresh_model):
    with pytest.raises(RuntimeError, match="only one model"):
        smp.DistributedModel(build_classifier(8, 3, hidden=16))


def test_state_dicts_use_the_wrapped_module_keys(fresh_model):
    model, plain = fresh_model
    assert list(model.state_dict()) == list(plain.state_dict())
    local = model.local_state_dict()
    assert local.pop("_smp_is_partial") is True
    model.load_state_dict({**local, "_smp_is_partial": True})
    assert weights_checksum(model.state_dict()) == weights_checksum(plain.state_dict())


def test_the_optimizer_stays_a_torch_optimizer(fresh_model):
    model, _ = fresh_model
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    partial = optimizer.local_state_dict()
    assert partial["_smp_is_partial"] is True
    optimizer.load_state_dict(partial)
    assert smp.state.optimizer is optimizer and scheduler.optimizer is optimizer


def test_save_writes_partial_files_per_model_parallel_rank(one_rank_smp, tmp_path):
    smp.save({"step": 3}, str(tmp_path / "ckpt.pt"), partial=True)
    assert (tmp_path / "ckpt.pt_0").is_file()
    assert smp.load(str(tmp_path / "ckpt.pt"), partial=True) == {"step": 3}
    smp.save({"step": 4}, str(tmp_path / "full.pt"), partial=False)
    assert smp.load(str(tmp_path / "full.pt"), partial=False) == {"step": 4}
    with pytest.raises(TypeError, match="only a string file name"):
        smp.save({}, tmp_path / "path.pt")


def test_ranks_and_groups_describe_a_data_parallel_world(one_rank_smp):
    assert (smp.rank(), smp.size(), smp.dp_size(), smp.mp_size(), smp.tp_size()) == (0, 1, 1, 1, 1)
    assert smp.get_mp_group() == [0] and smp.get_dp_group() == [0]
    assert smp.allgather("x") == ["x"] and smp.is_initialized()
    with pytest.raises(ValueError, match="below pipeline_parallel_degree"):
        with smp.partition(1):
            pass


def test_the_smddp_stand_in_refuses_sub_groups(tmp_path):
    script = textwrap.dedent(
        """
        import torch, torch.distributed as dist
        from smdist.runtime.smddp import SubGroupNotSupportedError, use_smddp
        assert use_smddp() == "stand-in"
        dist.init_process_group(backend="smddp")
        value = torch.ones(1)
        dist.all_reduce(value)
        assert dist.get_backend() == "smddp" and value.item() == 1.0
        try:
            dist.new_group([0])
        except SubGroupNotSupportedError as error:
            print("refused:", error)
        dist.destroy_process_group()
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in smp_rendezvous_keys()}
    env["MASTER_PORT"] = str(_free_port())
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "refused: torch.distributed.new_group(ranks=[0]) on the smddp backend" in result.stdout
    assert "does not support sub-groups" in result.stdout
    assert "local stand-in running gloo collectives" in result.stderr


# --- the training loop ------------------------------------------------------------------


class Sampler:
    def __init__(self) -> None:
        self.epochs: list[int] = []

    def set_epoch(self, epoch: int) -> None:
        self.epochs.append(epoch)


class Stop:
    requested = False


def local_agreement(value, count, stop_flag):
    """What RankAgreement answers on one rank; the loop takes any callable like it."""
    return float(value) / count, stop_flag


@pytest.fixture(params=["callable", "rank-agreement"])
def agreement(request, one_rank_smp):
    from smdist.runtime.torch_training import RankAgreement

    return local_agreement if request.param == "callable" else RankAgreement(torch.device("cpu"))


def run_loop(agree, batches_per_epoch=5, stop_at=None, is_main=False, **settings):
    """run_training on batches numbered 0..n-1 per epoch; records what it did.

    Its checkpoints are steps in a list; as the main rank it also names a file for each, as the
    entry points' writers do, so the loop announces them.
    """
    seen, checkpoints, stop, sampler = [], [], Stop(), Sampler()
    loader = list(range(batches_per_epoch))

    def checkpoint(step):
        checkpoints.append(step)
        return f"checkpoints/checkpoint-{step:09d}.pt" if is_main else None

    def train_step(batch):
        seen.append(batch)
        if stop_at is not None and len(seen) == stop_at:
            stop.requested = True
        return torch.tensor(float(batch))

    options = {"epochs": 3, "max_steps": 0, "log_every": 2, "checkpoint_every": 0}
    options.update(settings)
    start_step = options.pop("start_step", 0)
    result = run_training(
        loader,
        sampler,
        train_step,
        LoopSettings(global_batch=8, **options),
        checkpoint=checkpoint,
        stop=stop,
        agree=agree,
        is_main=is_main,
        start_step=start_step,
    )
    return result, seen, checkpoints, sampler


def test_the_loop_runs_every_epoch_and_checkpoints_on_schedule_and_at_the_end(agreement):
    result, seen, checkpoints, sampler = run_loop(agreement, checkpoint_every=4)
    assert seen == [0, 1, 2, 3, 4] * 3 and sampler.epochs == [0, 1, 2]
    assert (result.step, result.epoch, result.stopped, result.trained) == (15, 3, False, 15)
    assert checkpoints == [4, 8, 12, 15]  # the last state too: a longer run continues from it
    assert result.loss == pytest.approx(4.0)  # the last window holds batch 4 alone


def test_without_periodic_checkpoints_a_finished_run_writes_none(agreement):
    _, _, checkpoints, _ = run_loop(agreement, checkpoint_every=0)
    assert checkpoints == []


def announced(stderr: str) -> list[int]:
    return [int(step) for step in re.findall(r"smdist: checkpoint step=(\d+) written", stderr)]


def test_checkpoint_lines_come_once_per_epoch_and_for_the_last_one(agreement, capsys):
    # 3 epochs of 10 steps, a checkpoint every 2 steps: 15 written, 3 lines.
    _, _, checkpoints, _ = run_loop(
        agreement, batches_per_epoch=10, is_main=True, checkpoint_every=2
    )
    assert checkpoints == list(range(2, 31, 2))
    stderr = capsys.readouterr().err
    # The first of epochs 1 and 2; in the last epoch only the last one.
    assert announced(stderr) == [2, 12, 30]
    assert stderr.count("shown once per epoch; set checkpoint_every to see each") == 1


def test_checkpoint_lines_come_for_every_checkpoint_when_the_job_chose_the_interval(
    agreement, capsys
):
    _, _, checkpoints, _ = run_loop(
        agreement,
        batches_per_epoch=10,
        is_main=True,
        checkpoint_every=2,
        announce_every_checkpoint=True,
    )
    assert announced(capsys.readouterr().err) == checkpoints == list(range(2, 31, 2))


def test_a_run_resumed_at_its_end_trains_nothing_and_says_so_in_one_line(
    agreement, capsys, tmp_path, monkeypatch
):
    from smdist.runtime.torch_training import final_report

    monkeypatch.setenv("SMDIST_CHECKPOINT_DIR", str(tmp_path))
    monkeypatch.setenv("SMDIST_LOCAL_JOB_ID", "test")  # as under smdist run
    (tmp_path / "checkpoint-000000015.pt").write_bytes(b"")
    result, seen, checkpoints, _ = run_loop(
        agreement, is_main=True, checkpoint_every=4, start_step=15
    )
    assert seen == [] and checkpoints == []
    assert (result.step, result.epoch, result.trained, result.stopped) == (15, 3, 0, False)
    final_report(result, is_main=True)
    out, err = capsys.readouterr()
    assert "[metrics]" not in out  # no line for steps this run did not take
    [line] = err.splitlines()
    assert line == (
        "smdist: nothing left to train: the checkpoint restored from "
        f"{tmp_path / 'checkpoint-000000015.pt'} is at epoch 3 of 3 (step 15); to start fresh "
        "run `smdist run --fresh ...` (smdist.fit: options={'fresh': True}), or raise epochs "
        "to train on"
    )


def test_a_run_resumed_at_max_steps_names_max_steps(agreement, capsys):
    result, seen, _, _ = run_loop(agreement, is_main=True, max_steps=7, start_step=7)
    assert seen == [] and result.trained == 0
    assert "is at step 7 and max_steps is 7" in capsys.readouterr().err


def test_max_steps_ends_training_early(agreement):
    result, seen, _, _ = run_loop(agreement, max_steps=7)
    assert result.step == 7 and len(seen) == 7


def test_a_resumed_run_skips_the_batches_it_already_trained_on(agreement):
    result, seen, _, sampler = run_loop(agreement, start_step=7)
    assert seen == [2, 3, 4] + [0, 1, 2, 3, 4] and sampler.epochs == [1, 2]
    assert result.step == 15


def test_a_stop_request_ends_training_one_agreement_later_with_a_checkpoint(agreement):
    # Requested during step 3; sent with the agreement of step 10, read at the next one (20).
    result, seen, checkpoints, _ = run_loop(
        agreement, batches_per_epoch=10, stop_at=3, checkpoint_every=100
    )
    assert result.stopped and result.step == 2 * FIRST_AGREEMENT_STEPS == len(seen)
    assert checkpoints == [2 * FIRST_AGREEMENT_STEPS]


def test_agreements_follow_at_intervals_every_rank_computes_alike():
    calls = []

    def recording(value, count, stop_flag):
        calls.append(float(value))
        return 3.0, False  # the ranks' mean proposal: agree again 3 steps later

    run_loop(recording, batches_per_epoch=30, epochs=1)
    assert len(calls) == 5  # steps 10, 20 (first answer read), 23, 26, 29
    assert all(1 <= proposal <= MAX_AGREEMENT_INTERVAL for proposal in calls)


def test_loop_settings_refuse_impossible_values():
    with pytest.raises(ConfigurationError, match="log_every=0"):
        LoopSettings(epochs=1, max_steps=0, log_every=0, checkpoint_every=0, global_batch=1)
    with pytest.raises(ConfigurationError, match="epochs=-1"):
        LoopSettings(epochs=-1, max_steps=0, log_every=1, checkpoint_every=0, global_batch=1)


def test_the_synthetic_task_is_the_same_for_every_seed_holder():
    first, second = synthetic_classification(64, seed=3), synthetic_classification(64, seed=3)
    assert torch.equal(first.tensors[0], second.tensors[0])
    assert len(set(first.tensors[1].tolist())) > 1
