from __future__ import annotations

from migrate_fi.cli import main

if __name__ == "__main__":
    main()
