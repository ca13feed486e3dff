"""``python -m memory_server``: the same as the ``seamkit-memory-server`` command."""

from memory_server import main

if __name__ == "__main__":
    main()
