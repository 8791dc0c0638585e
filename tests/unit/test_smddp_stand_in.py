"""The smddp stand-in answers ``torch.distributed.new_group()`` as SageMaker's SMDDP library
does, and the same on every rank.

AWS documents (https://docs.aws.amazon.com/sagemaker/latest/dg/data-parallel-modify-sdp-pt.html):
"the smddp backend currently does not support creating subprocess groups with the
torch.distributed.new_group() API". torch builds a group's backend on its members only, so a
refusal made there reached ranks 0 and 1 of ``new_group([0, 1])`` while ranks 2 and 3 went on.
"""

from __future__ import annotations

import pytest
from gloo_ranks import run_ranks

pytestmark = pytest.mark.torch

NEW_GROUP_ON_EVERY_RANK = """
import json, sys
from pathlib import Path
import torch, torch.distributed as dist
from smdist.runtime.smddp import SubGroupNotSupportedError, use_smddp

assert use_smddp() == "stand-in"
dist.init_process_group(backend="smddp")
rank = dist.get_rank()
answers = {}
for name, call in {
    "pair": lambda: dist.new_group([0, 1]),
    "every rank": lambda: dist.new_group(),
    "pair, positional backend": lambda: dist.new_group([0, 1], None, "smddp"),
    "subgroups": lambda: dist.new_subgroups(2),
}.items():
    try:
        call()
        answers[name] = "allowed"
    except SubGroupNotSupportedError as error:
        answers[name] = f"refused: {error}"
value = torch.ones(1)
dist.all_reduce(value)  # the default group still works on every rank
result = {"answers": answers, "sum": value.item()}
Path(sys.argv[1], f"rank{rank}.json").write_text(json.dumps(result))
dist.destroy_process_group()
"""


def test_new_group_is_refused_on_every_rank_members_or_not(tmp_path):
    seen = run_ranks(NEW_GROUP_ON_EVERY_RANK, tmp_path, world=4)
    assert {rank: seen[rank]["sum"] for rank in seen} == dict.fromkeys(range(4), 4.0)
    for rank, result in seen.items():
        for name, answer in result["answers"].items():
            assert answer.startswith("refused: "), (rank, name, answer)
    message = seen[3]["answers"]["pair"]
    assert "new_group(ranks=[0, 1])" in message  # the call and its value
    assert "default process group" in message and "'nccl'" in message  # what works
    assert len({result["answers"]["pair"] for result in seen.values()}) == 1  # the same answer
