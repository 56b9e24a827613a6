"""`python -m clusterlab.cli`: the same command as the `clusterlab` script."""

from clusterlab.cli.app import main

if __name__ == "__main__":  # ingest's worker processes import this module again: they must not run the command
    main()
