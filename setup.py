"""Build hook: wheels carry the default ontology and shapes (``ontology/*.ttl``, ``shapes/*.ttl``)
as ``graphmem/data``, where ``graphmem.ontology.model.default_paths`` finds them outside a checkout,
and the shapes' example cases (``shapes/tests/manifest.ttl`` and its ``data/*.ttl``), which
``graphmem ontology test`` runs by default. Everything else about the package is declared in
``pyproject.toml``."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithOntology(build_py):
    def run(self) -> None:
        super().run()
        for folder in ("ontology", "shapes", "shapes/tests", "shapes/tests/data"):
            target = Path(self.build_lib, "graphmem", "data", folder)
            self.mkpath(str(target))
            for ttl in sorted((ROOT / folder).glob("*.ttl")):
                self.copy_file(str(ttl), str(target / ttl.name))


setup(cmdclass={"build_py": BuildWithOntology})
