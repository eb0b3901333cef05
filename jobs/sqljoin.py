"""SQL shuffle join of orders with customers, then group-by aggregation.

Run with spark-submit, recorded by the sparkpredict listener::

    sparkpredict submit --job sqljoin -- jobs/sqljoin.py --size 64MB

The input is generated (deterministic per --seed) and cached on first use; see docs/workloads.md.
"""
import sys

from sparkpredict.workloads import main

if __name__ == "__main__":
    sys.exit(main("sqljoin", sys.argv[1:]))
