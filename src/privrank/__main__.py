"""``python -m privrank``: the ``privrank`` command."""
import sys

from .cli import main

if __name__ == "__main__":  # not when a tool walks the package and imports every module
    sys.exit(main())
