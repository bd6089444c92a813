"""A small GROQ interpreter for the fake Content Lake: enough of the language to answer the
queries a push sends, evaluated for real against the fake's documents rather than matched
as strings.

Supported: ``*``, ``@``, attributes and ``a.b`` traversal (mapped over arrays), filters
``[expr]``, indexes ``[n]``, slices ``[a..b]`` / ``[a...b]``, projections ``{a, "k": expr}``,
``| order(field [asc|desc], …)``, literals (strings, numbers, true/false/null), ``$params``,
``!``, ``&&``, ``||``, ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in`` (arrays and
``path()``), ``+``, and the functions ``count``, ``defined``, ``path``,
``string::startsWith`` and ``string::split``. Unknown syntax is a :class:`GroqError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class GroqError(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>\d+(?:\.\d+)?)
  | (?P<param>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)?)
  | (?P<op>\.\.\.|\.\.|==|!=|<=|>=|&&|\|\||[*@!<>+\-\[\]{}(),:.|])
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    position: int


def tokenize(source: str) -> list[Token]:
    tokens, position = [], 0
    while position < len(source):
        if source[position:].strip() == "":
            break
        match = _TOKEN.match(source, position)
        if match is None or match.end() == position:
            raise GroqError(f"unexpected character at {position}", position)
        kind = match.lastgroup or ""
        tokens.append(Token(kind, match.group(kind), match.start(kind)))
        position = match.end()
    tokens.append(Token("end", "", len(source)))
    return tokens


@dataclass(frozen=True)
class Scope:
    root: list[dict[str, Any]]
    this: Any
    params: dict[str, Any]


Node = Callable[[Scope], Any]


@dataclass(frozen=True)
class PathPattern:
    regex: re.Pattern[str]


def path_pattern(pattern: str) -> PathPattern:
    """GROQ ``path()``: ``*`` is one segment (no dot), ``**`` anything; dots are literal."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^.]*", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return PathPattern(re.compile(f"^{out}$"))


def _attr(value: Any, name: str) -> Any:
    if isinstance(value, list):
        return [_attr(v, name) for v in value]
    return value.get(name) if isinstance(value, dict) else None


def _compare(op: str, a: Any, b: Any) -> Any:
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "in":
        if isinstance(b, PathPattern):
            return isinstance(a, str) and bool(b.regex.match(a))
        return a in b if isinstance(b, list) else None
    comparable = (isinstance(a, str) and isinstance(b, str)) or (
        isinstance(a, int | float) and isinstance(b, int | float)
    )
    if not comparable:
        return None
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _starts_with(value: Any, prefix: Any) -> Any:
    if not isinstance(value, str) or not isinstance(prefix, str):
        return None
    return value.startswith(prefix)


def _split(value: Any, sep: Any) -> Any:
    if not isinstance(value, str) or not isinstance(sep, str):
        return None
    return value.split(sep)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "count": lambda v: len(v) if isinstance(v, list) else None,
    "defined": lambda v: v is not None,
    "path": lambda v: path_pattern(v) if isinstance(v, str) else None,
    "string::startsWith": _starts_with,
    "string::split": _split,
}


class Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = tokenize(source)
        self.index = 0

    # -- token helpers -----------------------------------------------------------------------
    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def accept(self, text: str) -> bool:
        if self.token.kind in ("op", "name") and self.token.text == text:
            self.index += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            raise GroqError(f"expected {text!r} at {self.token.position}", self.token.position)

    def parse(self) -> Node:
        node = self.pipe()
        if self.token.kind != "end":
            raise GroqError(f"unexpected {self.token.text!r}", self.token.position)
        return node

    # -- grammar, lowest precedence first ------------------------------------------------------
    def pipe(self) -> Node:
        node = self.or_()
        while self.accept("|"):
            if not self.accept("order"):
                raise GroqError("only order() may follow a pipe", self.token.position)
            node = self.postfix(self.order(node))
        return node

    def order(self, base: Node) -> Node:
        self.expect("(")
        keys: list[tuple[Node, bool]] = []
        while True:
            key = self.or_()
            descending = self.accept("desc")
            if not descending:
                self.accept("asc")
            keys.append((key, descending))
            if not self.accept(","):
                break
        self.expect(")")

        def run(scope: Scope) -> Any:
            items = base(scope)
            if not isinstance(items, list):
                return None
            for key, descending in reversed(keys):
                items = sorted(
                    items,
                    key=lambda item, key=key: (lambda v: (v is None, v if v is not None else ""))(
                        key(Scope(scope.root, item, scope.params))
                    ),
                    reverse=descending,
                )
            return items

        return run

    def or_(self) -> Node:
        node = self.and_()
        while self.accept("||"):
            left, right = node, self.and_()
            node = lambda s, left=left, right=right: left(s) is True or right(s) is True  # noqa: E731
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.accept("&&"):
            left, right = node, self.not_()
            node = lambda s, left=left, right=right: left(s) is True and right(s) is True  # noqa: E731
        return node

    def not_(self) -> Node:
        if self.accept("!"):
            inner = self.not_()
            return lambda s: (lambda v: None if v is None else not v)(inner(s))
        return self.comparison()

    def comparison(self) -> Node:
        node = self.additive()
        for op in ("==", "!=", "<=", ">=", "<", ">", "in"):
            if self.accept(op):
                left, right = node, self.additive()
                return lambda s, op=op: _compare(op, left(s), right(s))
        return node

    def additive(self) -> Node:
        node = self.postfix(self.primary())
        while self.accept("+"):
            left, right = node, self.postfix(self.primary())

            def add(s: Scope, left: Node = left, right: Node = right) -> Any:
                a, b = left(s), right(s)
                if isinstance(a, str) and isinstance(b, str):
                    return a + b
                if isinstance(a, int | float) and isinstance(b, int | float):
                    return a + b
                return None

            node = add
        return node

    def primary(self) -> Node:
        token = self.token
        if token.kind == "string":
            self.index += 1
            value = _unquote(token.text)
            return lambda s: value
        if token.kind == "number":
            self.index += 1
            number = float(token.text) if "." in token.text else int(token.text)
            return lambda s: number
        if token.kind == "param":
            self.index += 1
            name = token.text[1:]

            def param(s: Scope) -> Any:
                if name not in s.params:
                    raise GroqError(f"param ${name} referenced, but not provided", token.position)
                return s.params[name]

            return param
        if self.accept("*"):
            return lambda s: list(s.root)
        if self.accept("@"):
            return lambda s: s.this
        if self.accept("("):
            inner = self.pipe()
            self.expect(")")
            return inner
        if self.accept("-"):
            inner = self.primary()
            return lambda s: (lambda v: -v if isinstance(v, int | float) else None)(inner(s))
        if token.kind == "name":
            self.index += 1
            if token.text in ("true", "false", "null"):
                constant = {"true": True, "false": False, "null": None}[token.text]
                return lambda s: constant
            if self.accept("("):
                return self.call(token)
            name = token.text
            return lambda s: _attr(s.this, name)
        raise GroqError(f"unexpected {token.text!r}", token.position)

    def call(self, token: Token) -> Node:
        function = FUNCTIONS.get(token.text)
        if function is None:
            raise GroqError(f"unknown function {token.text}()", token.position)
        args: list[Node] = []
        if not self.accept(")"):
            while True:
                args.append(self.pipe())
                if not self.accept(","):
                    break
            self.expect(")")
        return lambda s: function(*(a(s) for a in args))

    def postfix(self, node: Node) -> Node:
        while True:
            if self.accept("."):
                name = self.token.text
                if self.token.kind != "name":
                    raise GroqError("expected an attribute name", self.token.position)
                self.index += 1
                node = lambda s, base=node, name=name: _attr(base(s), name)  # noqa: E731
            elif self.accept("["):
                node = self.bracket(node)
            elif self.token.kind == "op" and self.token.text == "{":
                self.index += 1
                node = self.projection(node)
            else:
                return node

    def bracket(self, base: Node) -> Node:
        ahead = [t.kind if t.kind == "number" else t.text for t in self.tokens[self.index :][:3]]
        is_index = ahead[:2] == ["number", "]"] or ahead == ["-", "number", "]"]
        first = self.or_()
        for op in ("...", ".."):
            if self.accept(op):
                last = self.or_()
                self.expect("]")
                inclusive = op == ".."

                def slice_(
                    s: Scope, first: Node = first, last: Node = last, inclusive: bool = inclusive
                ) -> Any:
                    items, a, b = base(s), first(s), last(s)
                    if not isinstance(items, list):
                        return None
                    end = b + 1 if inclusive else b
                    return items[a : None if inclusive and end == 0 else end]

                return slice_
        self.expect("]")
        if is_index:

            def index(s: Scope, first: Node = first) -> Any:
                items, i = base(s), first(s)
                if not isinstance(items, list) or not -len(items) <= i < len(items):
                    return None
                return items[i]

            return index

        def filter_(s: Scope, condition: Node = first) -> Any:
            items = base(s)
            if not isinstance(items, list):
                return None
            return [i for i in items if condition(Scope(s.root, i, s.params)) is True]

        return filter_

    def projection(self, base: Node) -> Node:
        fields: list[tuple[str, Node]] = []
        while not self.accept("}"):
            token = self.token
            if token.kind == "string":
                self.index += 1
                self.expect(":")
                fields.append((_unquote(token.text), self.pipe()))
            elif token.kind == "name":
                self.index += 1
                name = token.text
                fields.append((name, lambda s, name=name: _attr(s.this, name)))
            else:
                raise GroqError(f"unexpected {token.text!r} in a projection", token.position)
            if not self.accept(","):
                self.expect("}")
                break

        def project_one(s: Scope, item: Any) -> Any:
            if not isinstance(item, dict):
                return None
            inner = Scope(s.root, item, s.params)
            return {k: v for k, n in fields if (v := n(inner)) is not None}

        def project(s: Scope) -> Any:
            value = base(s)
            if isinstance(value, list):
                return [project_one(s, v) for v in value]
            return project_one(s, value)

        return project


def _unquote(text: str) -> str:
    import json

    if text.startswith("'"):
        text = '"' + text[1:-1].replace('"', '\\"') + '"'
    value = json.loads(text)
    assert isinstance(value, str)
    return value


def evaluate(query: str, documents: list[dict[str, Any]], params: dict[str, Any]) -> Any:
    """Evaluate ``query`` against ``documents`` with ``params``."""
    return Parser(query).parse()(Scope(documents, None, params))
