"""``python -m prefjudge``."""

from prefjudge.cli import main

if __name__ == "__main__":
    main()
