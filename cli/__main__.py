"""`python -m cli` runs the `corral` command (the console script is the same entry point)."""

from cli.main import main

main()
