"""Which packages the distribution holds and where their files are (pyproject.toml holds the rest).

conf/, sweeps/ and plugins/ stay at the repository's top level; a wheel installs them as `rlx/conf`,
`rlx/sweeps` (package data: every config group directory is listed as a package of YAML files) and
`hydra_plugins/rlx_searchpath` (Hydra's plugin namespace). A default (`pip install -e .`) or strict editable
install maps the same names back onto the checkout, so Hydra's plugin scan finds the plugin there too.
`rlx.cli.configs.config_dirs` finds conf/ and sweeps/ either way. The lists are computed, never kept by hand.
"""

from setuptools import find_namespace_packages, find_packages, setup

PLUGINS = "plugins/rlx_searchpath/hydra_plugins"
CONFIGS = {"rlx.conf": "conf", "rlx.sweeps": "sweeps"}
config_packages = [f"{name}.{sub}" if sub else name for name, path in CONFIGS.items()
                   for sub in ["", *find_namespace_packages(path)]]

setup(
    packages=[*find_packages(include=["rlx", "rlx.*"]), *config_packages,
              "hydra_plugins", *(f"hydra_plugins.{p}" for p in find_packages(PLUGINS))],
    package_dir={**CONFIGS, "hydra_plugins": PLUGINS},
    package_data={name: ["*.yaml"] for name in config_packages},
)
