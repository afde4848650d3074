"""MkDocs hooks: the configuration reference is generated from ``graphmem.config`` at build time.

The reference is rendered from the config models' own field docstrings (pydantic's
``use_attribute_docstrings``), so a field cannot be added without appearing in the docs, and
``tests/test_docs.py`` fails when one has no docstring.
"""

from __future__ import annotations

import enum
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from graphmem.config import MemoryConfig, default_home

REFERENCE = "reference/configuration.md"

_INTRO = """\
# Configuration reference

Every field of `graphmem.MemoryConfig`, generated from `graphmem/config.py` when the site is built.
Set a field in a YAML or TOML file (`graphmem --config FILE`, `MemoryConfig.from_file`), a dict
(`Memory.from_config({...})`) or an environment variable: `GRAPHMEM_` and the path with `__` between
levels (`GRAPHMEM_SEARCH__GRAPH__DEPTH=3`). Values given explicitly win over the environment.
See [Configuration](../operators/configuration.md) for how the sections fit together.
"""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' if isinstance(a, str) else repr(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None:
        inner = ", ".join(_type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "null"
    if annotation is SecretStr:
        return "secret string"
    if isinstance(annotation, type):
        return {"Path": "path", "str": "string", "int": "integer", "float": "number", "bool": "boolean"}.get(
            annotation.__name__, annotation.__name__)
    return str(annotation)


def _default(field: FieldInfo) -> str:
    if field.default_factory is default_home:  # the builder's own home is no one else's default
        return "`$GRAPHMEM_HOME`, else `~/.graphmem`"
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return ""
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "`null`"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, Path):
        return f"`{value}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value!r}`"


def _model_of(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The section model a field holds, and whether it holds a list of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if typing.get_origin(annotation) is list:
        (arg,) = typing.get_args(annotation)
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg, True
    return None, False


def fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, type[BaseModel] | None, FieldInfo]]:
    """Every field of ``model`` as (dotted path, its documentation, its section model or None, the
    field), depth first. A section is documented by its field's docstring, else its class's."""
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        section, many = _model_of(field.annotation)
        doc = field.description or (section.__doc__ if section is not None else None) or ""
        yield path, doc, section, field
        if section is not None:
            yield from fields(section, f"{path}[]." if many else f"{path}.")


def _prose(text: str) -> str:
    """A docstring as Markdown: reST double backticks become single, lines join into paragraphs."""
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    text = re.sub(r":(?:func|class|meth|attr):`([^`]+)`", r"`\1`", text)
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paragraphs if p)


def render() -> str:
    out = [_INTRO]
    for path, doc, section, field in fields(MemoryConfig):
        depth = path.count(".") + 2
        env = "GRAPHMEM_" + path.upper().replace(".", "__") if "[]" not in path else ""
        if section is not None:
            out.append(f"{'#' * min(depth, 4)} `{path}`\n")
            out.append(_prose(doc) + "\n")
            continue
        out.append(f"{'#' * min(depth, 5)} `{path}`\n")
        facts = [f"**type** {_type_name(field.annotation)}"]
        if default := _default(field):
            facts.append(f"**default** {default}")
        if env:
            facts.append(f"**environment** `{env}`")
        out.append(" · ".join(facts) + "\n")
        out.append(_prose(doc) + "\n")
    return "\n".join(out)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, REFERENCE, content=render()))
    return files
