"""Functions that build or take apart strings."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

from engine import budget
from engine.template.functions.core import Function, Scope, as_text, is_sequence, resolve


@dataclasses.dataclass(frozen=True)
class StrReplace(Function):
    """``str_replace: {template, params}``.

    ``json_values`` (2015-10-15 on) writes maps and lists as JSON; before that a param value
    must be a string, a number or a boolean, as in Heat."""

    fn_name = "str_replace"
    template: Any
    params: Any
    json_values: bool = True

    def resolve(self, scope: Scope) -> Any:
        text = resolve(self.template, scope)
        params = resolve(self.params, scope)
        if not isinstance(text, str):
            raise self.fail(f'"{self.fn_name}" template must be a string')
        if not isinstance(params, Mapping):
            raise self.fail(f'"{self.fn_name}" params must be a map')
        if not all(isinstance(k, str) for k in params):
            raise self.fail(f'"{self.fn_name}" param placeholders must be strings')
        values = {k: self._value(k, v) for k, v in params.items()}
        # NOTE: longest keys first, equal lengths in order, as Heat sorts them (Replace in
        # heat/engine/hot/functions.py), so that a key that is a prefix of another cannot
        # clobber it.
        keys = sorted(values, key=lambda k: (-len(k), k))
        if keys and not keys[-1]:
            raise self.fail(f'"{self.fn_name}" param placeholders must not be empty')
        found: set[str] = set()
        what = f'Evaluation of "{self.fn_name}"'
        try:
            # A pass over the text per key: fast, but a long text and many keys are the
            # time of a pattern, so they share the evaluation's time budget.
            with budget.timed(what, self.location) as deadline:
                result = _replace_all(text, keys, values, found,
                                      budget.Meter(self.fn_name, self.location), deadline)
        except TimeoutError:
            raise budget.too_long(what, self.location) from None
        except ValueError as exc:
            raise self.fail(f'"{self.fn_name}" {exc}') from None
        self._check(keys, found)
        return result

    def _value(self, key: str, value: Any) -> str:
        if isinstance(value, (Mapping, list)) and not self.json_values:
            raise self.fail(f'"{self.fn_name}" params must be strings or numbers, param '
                            f"{key} is not valid")
        try:
            return as_text(value)
        except TypeError:  # a map whose keys do not sort (numbers and strings)
            raise self.fail(f'"{self.fn_name}" params must be strings, numbers, list or map. '
                            f"Failed to json serialize {value}") from None

    def _check(self, keys: list[str], found: set[str]) -> None:
        """Nothing to check in the lenient form; the strict forms override this."""


def _replace_all(text: str, keys: list[str], values: Mapping[str, str], found: set[str],
                 meter: budget.Meter, deadline: float) -> str:
    """``text`` with each key replaced in turn, as Heat replaces them: a key is found only
    in the text between the places of the keys before it, never in a value.

    Heat splits the text on the first key, each piece on the next key, and so on, and
    joins the pieces back with the values. The same result in one ``replace`` per key:
    each place a key is found becomes one character found in no key and not in the text
    (a *mark*), which no later key can match or span, and the marks become the values
    at the end, in one ``translate``. So the work is a few passes of C over the text per
    key, with no Python step per place or piece, and the size of the result is known,
    and refused past the budget, before it is made.

    Raises ``TimeoutError`` past the monotonic ``deadline`` (checked before each key),
    and ``ValueError`` when there are not enough characters left for the marks (only
    possible with a template holding most of Unicode, past the default budget)."""
    size = 1 + len(text)
    marks = _unused_characters(text, keys)
    table: dict[int, str] = {}
    for key in keys:
        if time.monotonic() > deadline:
            raise TimeoutError
        count = text.count(key)
        if not count:
            continue
        mark = next(marks, None)
        if mark is None:
            raise ValueError("has too many distinct characters in its template and "
                             "placeholders to replace them all")
        size += count * (len(values[key]) - len(key))
        found.add(key)
        text = text.replace(key, mark)
        table[ord(mark)] = values[key]
    meter.add_size(size)
    return text.translate(table) if table else text


def _unused_characters(text: str, keys: list[str]) -> Iterator[str]:
    """Characters in neither ``text`` nor any key: the private use areas first."""
    used = set(text).union(*keys)
    planes = itertools.chain(range(0xE000, 0xF900), range(0xF0000, 0x110000),
                             range(0x1, 0xD800), range(0xF900, 0xF0000))
    return (chr(code) for code in planes if chr(code) not in used)


@dataclasses.dataclass(frozen=True)
class StrReplaceStrict(StrReplace):
    """``str_replace`` that refuses a param not found in the template."""

    fn_name = "str_replace_strict"

    def _check(self, keys: list[str], found: set[str]) -> None:
        missing = [k for k in keys if k not in found]
        if missing:
            raise self.fail(f"The following params were not found in the template: "
                            f"{','.join(missing)}")


@dataclasses.dataclass(frozen=True)
class StrReplaceVstrict(StrReplaceStrict):
    """``str_replace_strict`` that also refuses an empty value."""

    fn_name = "str_replace_vstrict"

    def _value(self, key: str, value: Any) -> str:
        text = super()._value(key, value)
        if value is None or (not text and value is not False and value != 0) or (
                isinstance(value, (Mapping, list)) and not value):
            raise self.fail(f"{self.fn_name} has an undefined or empty value for param "
                            f"{key}, must be a defined non-empty value")
        return text


@dataclasses.dataclass(frozen=True)
class StrSplit(Function):
    """``str_split: [delimiter, string, index?]``."""

    fn_name = "str_split"
    delimiter: Any
    text: Any
    index: Any = None

    def resolve(self, scope: Scope) -> Any:
        delimiter, text = resolve(self.delimiter, scope), resolve(self.text, scope)
        if text is None:
            return None
        if not isinstance(text, str):
            raise self.fail(f'String to split for "{self.fn_name}" must be a string, got '
                            f"{type(text).__name__}")
        if delimiter is not None and (not isinstance(delimiter, str) or not delimiter):
            raise self.fail(f'Delimiter for "{self.fn_name}" must be a non-empty string')
        if self.index is None and delimiter is not None:
            # The whole list is the value: refused before it is made.
            budget.check_items(text.count(delimiter) + 1, self.fn_name, self.location)
        pieces = text.split(delimiter)
        if self.index is None:
            budget.check_items(len(pieces), self.fn_name, self.location)
            return pieces
        index = resolve(self.index, scope)
        try:
            return pieces[int(index)]
        except (ValueError, TypeError):
            raise self.fail(f'Incorrect index to "{self.fn_name}" should be: '
                            f'"{self.fn_name}" : [ ",", "apples,pears", <index>]') from None
        except IndexError:
            raise self.fail(f'Incorrect index to "{self.fn_name}" should be between 0 '
                            f"and {len(pieces) - 1}") from None


@dataclasses.dataclass(frozen=True)
class ListJoin(Function):
    """``list_join: [delimiter, list, …]``; ``several`` (2015-10-15 on) joins more than one
    list and writes maps and lists as JSON, where the older form takes only strings."""

    fn_name = "list_join"
    delimiter: Any
    lists: tuple[Any, ...]
    several: bool = True

    def resolve(self, scope: Scope) -> Any:
        items: list[Any] = []
        for value in (resolve(v, scope) for v in self.lists):
            if not value and (self.several or value is None):
                continue
            if isinstance(value, str) or not is_sequence(value):
                raise self.fail(f'"{self.fn_name}" must operate on a list')
            items.extend(value)
        delimiter = resolve(self.delimiter, scope)
        if not isinstance(delimiter, str):
            raise self.fail(f'"{self.fn_name}" delimiter must be a string')
        budget.check_items(len(items), self.fn_name, self.location)
        # The delimiter goes between every two items: counted before any text is made.
        meter = budget.Meter(self.fn_name, self.location)
        meter.add_size(1 + max(len(items) - 1, 0) * len(delimiter))
        texts = []
        for item in items:
            texts.append(self._text(item))
            meter.add_size(len(texts[-1]))
        return delimiter.join(texts)

    def _text(self, item: Any) -> str:
        if item is None or isinstance(item, str):
            return item or ""
        if self.several and isinstance(item, (Mapping, list, tuple)):
            try:
                return as_text(item)
            except TypeError:  # a map whose keys do not sort (numbers and strings)
                raise self.fail(f"Items to join must be string, map or list. {item!r:.200} "
                                "failed json serialization") from None
        kinds = "string, map or list" if self.several else "strings"
        raise self.fail(f"Items to join must be {kinds} not {item!r:.200}")


@dataclasses.dataclass(frozen=True)
class Digest(Function):
    """``digest: [algorithm, value]``: the hex digest of ``value`` (hashlib names)."""

    fn_name = "digest"
    algorithm: Any
    value: Any

    def resolve(self, scope: Scope) -> Any:
        algorithm, value = resolve(self.algorithm, scope), resolve(self.value, scope)
        if not isinstance(algorithm, str) or not isinstance(value, str):
            raise self.fail(f'Argument to function "{self.fn_name}" must be a list of strings')
        # shake_* need a length, which the function has no way to give (Heat fails too).
        usable = sorted(a for a in hashlib.algorithms_available if not a.startswith("shake"))
        if algorithm.lower() not in usable:
            raise self.fail(f'Algorithm must be one of {", ".join(usable)}')
        try:
            data = value.encode("latin-1")
        except UnicodeEncodeError:
            raise self.fail(f'"{self.fn_name}" can only digest Latin-1 text') from None
        try:
            return hashlib.new(algorithm.lower(), data).hexdigest()
        except ValueError:  # listed by hashlib, refused by this OpenSSL (FIPS, legacy)
            raise self.fail(f'"{self.fn_name}": algorithm {algorithm} is not usable '
                            "here") from None


MAKE_URL_KEYS = ("scheme", "username", "password", "host", "port", "path", "query",
                 "fragment")


@dataclasses.dataclass(frozen=True)
class MakeUrl(Function):
    """``make_url: {scheme, username, password, host, port, path, query, fragment}``."""

    fn_name = "make_url"
    parts: Any

    def resolve(self, scope: Scope) -> Any:
        parts = resolve(self.parts, scope)
        check_make_url(parts, self.fail)
        scheme = parts.get("scheme") or ""
        if ":" in scheme:
            raise self.fail('URL "scheme" should not contain \':\'')
        user = urllib.parse.quote(parts.get("username") or "", safe="")
        password = parts.get("password") or ""
        if password:
            user += ":" + urllib.parse.quote(password, safe="")
        host = (parts.get("host") or "").removeprefix("[").removesuffix("]")
        host = urllib.parse.quote(host, safe=":")
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{user}@{host}" if parts.get("username") or password else host
        if parts.get("port"):
            netloc += f":{parts['port']}"
        path = urllib.parse.quote(parts.get("path") or "")
        if netloc and path and not path.startswith("/"):
            path = "/" + path
        query = urllib.parse.urlencode(parts.get("query") or {}).replace("%2F", "/")
        fragment = urllib.parse.quote(parts.get("fragment") or "")
        return urllib.parse.urlunsplit((scheme, netloc, path, query, fragment))


def check_make_url(parts: Any, fail: Any) -> None:
    """Heat's checks of the arguments, in its order."""
    if not isinstance(parts, Mapping):
        raise fail('The arguments to "make_url" must be a map')
    unknown = sorted(set(parts) - set(MAKE_URL_KEYS))
    if unknown:
        raise fail(f'Invalid arguments to "make_url": {", ".join(unknown)}')
    for key in MAKE_URL_KEYS:
        if key not in parts or isinstance(parts[key], Function):
            continue
        value = parts[key]
        if key == "query":
            if not isinstance(value, Mapping):
                raise fail('The "query" argument to "make_url" must be a map')
        elif key == "port":
            try:
                port = int(value)
            except (TypeError, ValueError):
                raise fail(f'Invalid URL port "{value}" for make_url') from None
            if not 1 <= port <= 65535:
                raise fail(f"Invalid URL port {port}, must be in range 1-65535")
        elif not isinstance(value, str):
            raise fail(f'The "{key}" argument to "make_url" must be a string')
