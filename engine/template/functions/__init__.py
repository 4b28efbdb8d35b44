"""Intrinsic functions: parsing template values into an expression tree and evaluating it.

``core`` holds the tree and its walkers, ``parser`` which name is which function in each
version, and one module per family of functions. The names below are what the rest of
the engine uses.
"""

from engine.template.functions.core import (
    Deferred,
    Function,
    Reference,
    Scope,
    invalid_reference,
    iter_functions,
    iter_references,
    resolve,
    resource_dependencies,
)
from engine.template.functions.logic import ELIDED, If, or_null, select_branches
from engine.template.functions.parser import (
    IMPLEMENTED,
    ParseContext,
    parse_condition,
    parse_update_policy,
    parse_value,
)
from engine.template.functions.references import (
    GetAttr,
    GetParam,
    GetResource,
    substitute_facade,
)

__all__ = [
    "ELIDED", "IMPLEMENTED", "Deferred", "Function", "GetAttr", "GetParam", "GetResource",
    "If", "ParseContext", "Reference", "Scope", "invalid_reference", "iter_functions",
    "iter_references", "or_null", "parse_condition", "parse_update_policy", "parse_value",
    "resolve", "resource_dependencies", "select_branches", "substitute_facade",
]
