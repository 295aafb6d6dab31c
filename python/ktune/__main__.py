"""`python -m ktune ARGS...`: the ktune command, as the `ktune` script the package installs."""

import sys

from ._cli import main

sys.exit(main())
