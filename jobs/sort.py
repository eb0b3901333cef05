"""TeraSort-like total sort of 100-byte records by a 10-byte key.

Run with spark-submit, recorded by the sparkpredict listener::

    sparkpredict submit --job sort -- jobs/sort.py --size 64MB

The input is generated (deterministic per --seed) and cached on first use; see docs/workloads.md.
"""
import sys

from sparkpredict.workloads import main

if __name__ == "__main__":
    sys.exit(main("sort", sys.argv[1:]))
