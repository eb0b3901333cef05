"""Ships the listener's Java source inside the package, so `sparkpredict listener build`
works from a wheel too (a source checkout compiles listeners/ directly)."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        super().run()
        src = Path("listeners/src/main/java")
        if src.is_dir():
            shutil.copytree(src, Path(self.build_lib) / "sparkpredict/capture/listener_java",
                            dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPy})
