"""Griffe extension: the Sphinx roles of privrank's docstrings (``:func:`~privrank.fit_btl```) as
links of the API reference.

Each role becomes a cross-reference to the object it names, resolved in the scope of the
docstring that names it; one the reference does not show (a private helper, a module) stays
plain code, without a warning.
"""
import re
from html import escape

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj):`(?P<text>[^`]+)`")


def _link(obj: griffe.Object, text: str) -> str:
    title, _, target = text.partition(" <")
    if target:  # :func:`title <target>`
        target = target.rstrip(">")
    else:
        target = title.lstrip("~")
        title = target.rsplit(".", 1)[-1] if title.startswith("~") else target
    head, _, rest = target.partition(".")
    try:
        path = target if head == "privrank" else ".".join(filter(None, [obj.resolve(head), rest]))
    except griffe.NameResolutionError:
        path = target
    return f'<autoref identifier="{escape(path)}" optional><code>{escape(title)}</code></autoref>'


class SphinxRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.path == "privrank":
            self._rewrite(pkg)

    def _rewrite(self, obj: griffe.Object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(lambda m: _link(obj, m["text"]), obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._rewrite(member)
