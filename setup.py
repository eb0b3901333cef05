"""Ships files kept outside the package in the repository inside the wheel, so an installed
sparkpredict has them too (a source checkout reads them in place):

- listeners/src/main/java -> sparkpredict/capture/listener_java: `sparkpredict listener build`
  compiles it on the user's machine, against the user's pyspark.
- jobs/*.py -> sparkpredict/jobs: the spark-submit scripts (workloads, retrain.py) that
  docs/workloads.md and docs/retrain.md hand to spark-submit.
- conf/spark-defaults.conf.sparkpredict -> sparkpredict/conf: the cluster template, commented
  (`sparkpredict listener conf --template` prints it).
- docs/*.md -> sparkpredict/docs: the documents README.md and every `--help` cite.

The sdist carries these folders (MANIFEST.in), so a wheel built from it is the same.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: (folder in the repository, file pattern, folder inside the package)
COPIED = [
    ("listeners/src/main/java", "**/*.java", "sparkpredict/capture/listener_java"),
    ("jobs", "*.py", "sparkpredict/jobs"),
    ("conf", "spark-defaults.conf.sparkpredict", "sparkpredict/conf"),
    ("docs", "*.md", "sparkpredict/docs"),
    # README and --help cite the measured figures: after docs, whose copy replaces sparkpredict/docs
    ("benchmarks", "RESULTS.md", "sparkpredict/docs/measured"),
]


class BuildPy(build_py):
    def run(self):
        super().run()
        for src, pattern, dest in COPIED:
            files = sorted(Path(src).glob(pattern))
            if not files:
                # A wheel without them installs fine and fails only at run time: refuse to build.
                raise SystemExit(f"error: no {pattern} under {src}/ (an sdist without it? see MANIFEST.in)")
            out = Path(self.build_lib) / dest
            # Not merged into an earlier build's copy: a file deleted since must not ship.
            shutil.rmtree(out, ignore_errors=True)
            for f in files:
                target = out / f.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target)


setup(cmdclass={"build_py": BuildPy})
