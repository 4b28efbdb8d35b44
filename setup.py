import setuptools

# NOTE: the migrations live in the top-level migrations/ folder but ship as the package
# engine.migrations (see package_dir in setup.cfg); find_packages cannot discover a
# sub-package that lives outside its parent, so it is named here. Its versions/ folder
# (modules alembic loads by path, no __init__.py) is named too: shipped as package data
# instead, setuptools warned on every install that the package was not configured.
# The console's static folders (no __init__.py either) are named for the same reason; their
# files are engine.console's package data (setup.cfg).
setuptools.setup(
    packages=setuptools.find_packages(include=["engine", "engine.*", "plugins", "plugins.*"])
    + ["engine.migrations", "engine.migrations.versions"]
    + setuptools.find_namespace_packages(include=["engine.console.static*"]),
)
