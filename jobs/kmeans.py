"""MLlib k-means (k=5, 5 iterations) on 8-d Gaussian mixtures.

Run with spark-submit, recorded by the sparkpredict listener::

    sparkpredict submit --job kmeans -- jobs/kmeans.py --size 64MB

The input is generated (deterministic per --seed) and cached on first use; see docs/workloads.md.
"""
import sys

from sparkpredict.workloads import main

if __name__ == "__main__":
    sys.exit(main("kmeans", sys.argv[1:]))
