"""Message bodies made of named and unnamed parts, and schemas over them.

See docs/body.md. The public surface:

* :class:`MessagePart`, :class:`MessageBody` - the format, filesystem-like access;
* :class:`MessageBodySchema`, :class:`SchemaPart` - validation (batch and streaming);
* :func:`is_compatible` - exact output/input schema compatibility with counter-examples;
* ``agentfolio.body.interop`` - ACP and A2A parts.
"""

from .body import MessageBody
from .errors import BodyError, ContentError, GlobError, PartError, PartRejected, SchemaValidationError
from .globs import compile_glob, content_type_glob, name_glob
from .names import content_type_essence, is_valid_name
from .parts import MessagePart
from .schema import MessageBodySchema, MissingRequired, PartIssue, SchemaPart, ValidationReport
from .streaming import StreamValidator


def is_compatible(output_schema, input_schema, **kwargs):  # type: ignore[no-untyped-def]
    """See :func:`agentfolio.body.compat.is_compatible` (imported lazily: it pulls in automata)."""
    from .compat import is_compatible as _is_compatible

    return _is_compatible(output_schema, input_schema, **kwargs)


__all__ = [
    "BodyError",
    "ContentError",
    "GlobError",
    "MessageBody",
    "MessageBodySchema",
    "MessagePart",
    "MissingRequired",
    "PartError",
    "PartIssue",
    "PartRejected",
    "SchemaPart",
    "SchemaValidationError",
    "StreamValidator",
    "ValidationReport",
    "compile_glob",
    "content_type_essence",
    "content_type_glob",
    "is_compatible",
    "is_valid_name",
    "name_glob",
]
