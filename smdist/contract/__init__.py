"""The SageMaker training container's contract, in the standard library: what the container
and its toolkit set and start on each host.

- ``launch``: the plan's ``Launch`` (what starts the ranks, a ``Launcher``) and the ``Image``
  a command runs in;
- ``program``, ``mpi``, ``commands``: the runners' commands from the launch (the program,
  torchrun, the MPIRunner's and the SMDataParallelRunner's mpirun), one builder for every
  caller;
- ``environment``: the ``SM_*`` variables and the configuration files;
- ``groups``: heterogeneous clusters' instance groups (host names, ``resourceconfig.json``, the
  distribution's hosts, channels per group);
- ``parameter_server``, ``parameter_server_host``: the TensorFlow toolkit's parameter-server
  steps;
- ``hostname_shim``, ``image_prerequisites``: what an image must hold.

It ships with every job beside ``smdist.runtime`` and imports nothing else of smdist.
Python 3.8+.
"""
