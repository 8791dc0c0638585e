"""smdist's driver in SDK v3's ``sm_drivers`` channel: ``sm_train.sh`` runs it on every host.

The work is done by ``smdist.runtime.v3_driver``, which ships with the job's code: ``sm_train.sh``
has unpacked that into the code channel and made it the working directory.
"""

import os
import sys

sys.path.insert(0, os.environ.get("SM_SOURCE_DIR") or os.getcwd())

from smdist.runtime.v3_driver import main  # noqa: E402

sys.exit(main())
