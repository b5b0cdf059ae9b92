"""kopt's built-in components, installed as ``kopt_plugins.<name>``.

Each subpackage is a plugin registered through the ``kopt`` entry-point group
(pyproject.toml), exactly as a third-party package registers its own.
"""
