"""Griffe extension: the public names of ``privrank`` where users find them.

``privrank/__init__.py`` imports its public names on first use (``_EXPORTS``, PEP 562), which
static analysis cannot follow; this extension adds each name to the package as an alias of its
definition, so that ``::: privrank.NAME`` documents it under the name ``import privrank as pr``
gives it.
"""
import ast

import griffe


class PublicNames(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.path != "privrank":
            return
        exports = ast.literal_eval(str(pkg.members["_EXPORTS"].value))
        for name, module in exports.items():
            pkg.set_member(name, griffe.Alias(name, f"privrank.{module}.{name}", parent=pkg))
