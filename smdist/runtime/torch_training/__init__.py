"""What every PyTorch entry point needs besides its parallelism library.

The PyTorch entry points (DDP, SDDP, SMP v1, SMP v2, Horovod) differ in how they wrap the model
and average gradients; everything else is the same and lives in this package, so the scripts
show only what is specific to their strategy:

- rendezvous: fill torch.distributed's ``env://`` variables when the launcher (mpirun, a plain
  ``python``) did not, from the detected cluster environment;
- device and precision: one process per GPU, bf16 autocast where the GPU has it (fp16 with a
  gradient scaler otherwise), TF32 matmuls on Ampere and newer; plain fp32 on CPUs;
- data: ``*.npz`` files (``x`` float32 [N, F], ``y`` int64 [N]) from the train channel, or a
  learnable synthetic task; one shard per data-parallel rank, each batch gathered from the whole
  tensors in one indexing operation, on the GPU where the data fits there;
- a small MLP classifier;
- checkpoints: the main rank writes, the main rank reads the newest and hands it to every rank
  (ranks on other hosts cannot see the main host's checkpoint directory);
- the training loop: logging, periodic checkpoints and a SIGTERM-safe stop, with no host-device
  synchronisation on ordinary steps.

torch is imported inside functions: ``smdist.runtime`` must import without it.
"""

from smdist.runtime.torch_training.data import (
    ShardedBatches,
    load_npz_dataset,
    load_train_data,
    sharded_loader,
    synthetic_classification,
    training_data,
)
from smdist.runtime.torch_training.device import (
    Precision,
    choose_precision,
    pick_device,
    share_cpu_threads,
)
from smdist.runtime.torch_training.loop import (
    LoopResult,
    LoopSettings,
    RankAgreement,
    exit_code,
    final_report,
    finish,
    run_training,
)
from smdist.runtime.torch_training.process import (
    CONFIG_ERROR_EXIT_CODE,
    FAILURE_EXIT_CODE,
    ConfigurationError,
    collective_timeout,
    ensure_rendezvous_env,
    leave_process_group,
    release_before_exit,
    run_entry_point,
    say,
)
from smdist.runtime.torch_training.weights import (
    build_classifier,
    main_rank_checkpoints,
    read_latest_checkpoint,
    report_checksum,
    resume,
    save_weights,
    weights_checksum,
    write_checkpoint,
)

__all__ = [
    "CONFIG_ERROR_EXIT_CODE",
    "FAILURE_EXIT_CODE",
    "ConfigurationError",
    "LoopResult",
    "LoopSettings",
    "Precision",
    "RankAgreement",
    "ShardedBatches",
    "build_classifier",
    "choose_precision",
    "collective_timeout",
    "ensure_rendezvous_env",
    "exit_code",
    "final_report",
    "finish",
    "leave_process_group",
    "load_npz_dataset",
    "load_train_data",
    "main_rank_checkpoints",
    "pick_device",
    "share_cpu_threads",
    "read_latest_checkpoint",
    "release_before_exit",
    "report_checksum",
    "resume",
    "run_entry_point",
    "run_training",
    "save_weights",
    "say",
    "sharded_loader",
    "synthetic_classification",
    "training_data",
    "weights_checksum",
    "write_checkpoint",
]
