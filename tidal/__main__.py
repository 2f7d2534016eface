import sys

from tidal.entry.cli import main

sys.exit(main())
