"""word count over Zipf-distributed text (HiBench micro/wordcount).

Run with spark-submit, recorded by the sparkpredict listener::

    sparkpredict submit --job wordcount -- jobs/wordcount.py --size 64MB

The input is generated (deterministic per --seed) and cached on first use; see docs/workloads.md.
"""
import sys

from sparkpredict.workloads import main

if __name__ == "__main__":
    sys.exit(main("wordcount", sys.argv[1:]))
