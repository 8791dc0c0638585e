"""Hyperparameters the job chose, told apart from the defaults a ready script fills in."""

from __future__ import annotations

from smdist.runtime.args import parse_training_args
from smdist.runtime.torch_training.loop import LoopSettings


def test_the_options_a_job_spells_out_are_known_as_given():
    args = parse_training_args(["--epochs", "2", "--checkpoint_every=20", "--other", "1"])
    assert args.given == {"epochs", "checkpoint_every"}
    assert args.checkpoint_every == 20 and args.unknown == ["--other", "1"]


def test_a_default_interval_announces_checkpoints_once_per_epoch_a_chosen_one_every_time():
    default = LoopSettings.from_args(parse_training_args(["--epochs", "2"]), replicas=2)
    chosen = LoopSettings.from_args(parse_training_args(["--checkpoint_every", "20"]), replicas=2)
    assert default.checkpoint_every == chosen.checkpoint_every == 20
    assert not default.announce_every_checkpoint and chosen.announce_every_checkpoint
