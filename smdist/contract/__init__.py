"""The SageMaker training container's contract, in the standard library: what the container
and its toolkit set and start on each host (``environment``: the SM_* variables and files;
``commands``: the runners' commands from the plan's ``Launch``; ``parameter_server`` and
``parameter_server_host``: the TensorFlow toolkit's parameter-server steps; ``hostname_shim``
and ``image_prerequisites``: what an image must hold). It ships with every job beside
``smdist.runtime`` and imports nothing else of smdist. Python 3.8+.
"""
