"""PageRank, 3 iterations of join + aggregate over a power-law graph.

Run with spark-submit, recorded by the sparkpredict listener::

    sparkpredict submit --job pagerank -- jobs/pagerank.py --size 64MB

The input is generated (deterministic per --seed) and cached on first use; see docs/workloads.md.
"""
import sys

from sparkpredict.workloads import main

if __name__ == "__main__":
    sys.exit(main("pagerank", sys.argv[1:]))
