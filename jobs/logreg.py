"""MLlib logistic regression (10 L-BFGS iterations, 10 features).

Run with spark-submit, recorded by the sparkpredict listener::

    sparkpredict submit --job logreg -- jobs/logreg.py --size 64MB

The input is generated (deterministic per --seed) and cached on first use; see docs/workloads.md.
"""
import sys

from sparkpredict.workloads import main

if __name__ == "__main__":
    sys.exit(main("logreg", sys.argv[1:]))
