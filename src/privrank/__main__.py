"""``python -m privrank``: the ``privrank`` command."""
import sys

from .cli import main

sys.exit(main())
