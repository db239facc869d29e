"""``python -m fencepost`` behaves exactly like the ``fencepost`` command."""

from fencepost.cli import entry_point

if __name__ == "__main__":
    entry_point()
