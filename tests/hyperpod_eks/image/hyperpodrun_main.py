"""The image's ``hyperpodrun``: hyperpod-elastic-agent's own ``main``, on this machine's torch.

hyperpod-elastic-agent 1.1.3 declares torch < 2.12; under torch 2.13 its parser cannot start, as
torchrun's parser (which it extends) now has a ``--shutdown-timeout`` of its own. The agent's
option takes the name (argparse's ``resolve``), as it does on the torch it was written for;
nothing else of the agent is changed.
"""

import sys

import hyperpod_elastic_agent.run as agent

_torchrun_parser = agent.get_args_parser


def _parser():
    parser = _torchrun_parser()
    for container in (parser, *parser._action_groups):
        container.conflict_handler = "resolve"
    return parser


agent.get_args_parser = _parser

if __name__ == "__main__":
    sys.exit(agent.main())
