"""``smdistributed.modelparallel.tensorflow`` (SMP v1 for TensorFlow) has no local stand-in."""

raise ImportError(
    "smdistributed.modelparallel.tensorflow (SageMaker Model Parallel v1 for TensorFlow) exists "
    "only in AWS's TensorFlow training containers, and smdist has no local stand-in for it: its "
    "pipeline runs inside TensorFlow's graph, which a stand-in cannot reproduce. Test the script "
    "on SageMaker (backend 'sagemaker' or 'sagemaker-local'), or with the PyTorch SMP v1 API"
)
