"""The rule that opens a config key's comment: the type of its value and the range it must lie in.

A key's comment starts with its rule in parentheses, then says what the key does:

    # (int > 0) Transitions per gradient update.
    # (float in (0, 1]) Polyak factor of the target networks.
    # (float > 0 or None) Clip the gradient norm at this value; None: no clipping.

    rule        := alternative ('or' alternative)*
    alternative := 'None' | 'bool'
                 | ('int' | 'float') [bound]
                 | 'str' [choice | 'matching' STRING]
                 | 'list' '[' rule ']' ['of length' INT]
    bound       := ('>' | '>=' | '<' | '<=') NUMBER
                 | 'in' ('[' | '(') NUMBER ',' NUMBER (']' | ')')
                 | choice
    choice      := 'in' '{' value (',' value)* '}'
    NUMBER      := 0, -1.5, 1e-3, 100_000, 2**63 - 1, inf, -inf

A bare type (`(int)`) checks the type only. An int is never a bool; a float accepts an int. Floats
must be finite unless an interval closes on infinity (`(float in [0, inf])`); NaN is never valid. A rule with
'or None' takes `null` in YAML and `--set`, None in Python, whatever the key's default.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, NoReturn, Optional, Union

from tidal.base.errors import ConfigError

Number = Union[int, float]

_TYPES = ('None', 'bool', 'int', 'float', 'str', 'list')
_TOKEN = re.compile(r"""\s*(?:
    (?P<number>\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|inf\b)
  | (?P<string>'[^']*'|"[^"]*")
  | (?P<word>[A-Za-z_]\w*)
  | (?P<op>\*\*|>=|<=|[<>\[\](){},+\-])
)""", re.VERBOSE)


class RuleSyntaxError(ConfigError):
    """A rule in a config comment does not follow the grammar, or the key's own default breaks it
    (a typo must not silently drop a check)."""


@dataclass(frozen=True)
class Bound:
    """What a number or string must satisfy beyond its type; `text` as written in the rule."""

    text: str
    low: Number = -math.inf
    high: Number = math.inf
    closed: tuple[bool, bool] = (True, True)  # whether the interval includes low, high (`> 0`: (0, inf))
    choices: Optional[tuple[Any, ...]] = None
    pattern: Optional[str] = None

    def holds(self, value: Any) -> bool:
        if self.choices is not None:
            return value in self.choices
        if self.pattern is not None:
            return re.fullmatch(self.pattern, value) is not None
        above = value >= self.low if self.closed[0] else value > self.low
        below = value <= self.high if self.closed[1] else value < self.high
        return above and below

    def allows_infinity(self, value: float) -> bool:
        """An interval written to include -inf or inf lets that value through."""
        if self.choices is not None:
            return False
        return (value == self.low and self.closed[0]) or (value == self.high and self.closed[1])

    @property
    def expectation(self) -> str:
        return f'a str {self.text}' if self.pattern is not None else self.text


@dataclass(frozen=True)
class Alternative:
    """One type of a rule, with its bound (numbers, strings) or its items' rule (lists)."""

    kind: str
    text: str
    bound: Optional[Bound] = None
    item: Optional[Rule] = None
    length: Optional[int] = None

    def fits_type(self, value: Any) -> bool:
        if self.kind == 'None':
            return value is None
        if self.kind == 'bool':
            return isinstance(value, bool)
        if self.kind == 'int':
            return isinstance(value, int) and not isinstance(value, bool)
        if self.kind == 'float':
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if self.kind == 'str':
            return isinstance(value, str)
        return isinstance(value, (list, tuple))

    def problem(self, value: Any, path: str) -> Optional[tuple[str, str, bool]]:
        """(key path, what it must be, wrong type) if `value`, of this alternative's type, breaks the rule."""
        if isinstance(value, float) and not math.isfinite(value):
            takes_infinity = self.bound is not None and (self.bound.allows_infinity(math.inf)
                                                         or self.bound.allows_infinity(-math.inf))
            if math.isnan(value):
                return path, 'a number (not NaN)' if takes_infinity else 'finite', False
            if not (self.bound and self.bound.allows_infinity(value)):
                return path, 'finite', False
        if self.bound is not None and not self.bound.holds(value):
            return path, self.bound.expectation, False
        if self.kind == 'list':
            if self.length is not None and len(value) != self.length:
                return path, f'a list of length {self.length}', False
            assert self.item is not None  # the parser gives every list alternative its items' rule
            for index, item in enumerate(value):
                found = self.item.problem(item, f'{path}[{index}]')
                if found is not None:
                    return found
        return None


@dataclass(frozen=True)
class Rule:
    """A parsed rule: the value must fit one of the alternatives."""

    text: str
    alternatives: tuple[Alternative, ...]
    #: Why the rule holds, appended to its error (a model's `ConfigRule` gives one); '' for none.
    reason: str = ''

    def problem(self, value: Any, path: str) -> Optional[tuple[str, str, bool]]:
        """None if `value` keeps the rule, else (key path of the offending value, what it must be,
        whether its type is wrong)."""
        fitting = [alt for alt in self.alternatives if alt.fits_type(value)]
        if not fitting:
            return path, self.text, True
        found_all = [alt.problem(value, path) for alt in fitting]
        problems = [found for found in found_all if found is not None]
        if len(problems) < len(found_all):  # some alternative keeps the rule
            return None
        if len(problems) == 1 and (problems[0][0] != path or problems[0][2]):
            return problems[0]  # an item of a list, named by its index
        expected = [found[1] for found in problems]
        if value is not None and self.allows_none:
            expected.append('None')
        return path, ' or '.join(expected), False

    def check(self, value: Any, path: str) -> None:
        """Raise a one-line ConfigError naming the key path, the rule and the value if it is broken."""
        found = self.problem(value, path)
        if found is None:
            return
        where, expected, wrong_type = found
        bad = _lookup_item(value, path, where)
        got = ('None' if bad is None else f'{type(bad).__name__} ({bad!r})') if wrong_type else repr(bad)
        because = f'; {self.reason}' if self.reason else ''
        note = none_note(bad, self) if where == path else ''
        raise ConfigError(f"config key '{where}' must be {expected}, got {got}{because}{note}")

    @property
    def allows_none(self) -> bool:
        return any(alt.kind == 'None' for alt in self.alternatives)


def none_note(value: Any, rule: Optional[Rule]) -> str:
    """What to add to the error of `value` under `rule` (None: the key has no rule) when None is the point:
    a None the rule refuses, or the text 'None' where the rule takes None (YAML reads it as a string)."""
    allows_none = rule is not None and rule.allows_none
    if value is None and not allows_none:
        return ("; None is not allowed for this key (a key whose rule says 'or None' takes null in YAML and "
                "--set, None in Python)")
    takes_str = rule is not None and any(alt.kind == 'str' for alt in rule.alternatives)
    if value == 'None' and allows_none and not takes_str:
        return "; write None as null in YAML and --set (None in Python)"
    return ''


def opens_with_rule(comment: str) -> bool:
    """Whether `comment` opens with a parenthesis, where its key's rule is written."""
    return comment.lstrip().startswith('(')


def rule_of_comment(comment: str) -> Optional[Rule]:
    """The rule opening `comment`, None if the comment opens with no parenthesis; a RuleSyntaxError
    if the parenthesis holds no valid rule."""
    if not opens_with_rule(comment):
        return None
    parser = _Parser(comment.lstrip(), 1)
    rule = parser.rule(stop=(')',))
    parser.take(')')
    return rule


def parse_rule(text: str) -> Rule:
    """A rule written without its parentheses, e.g. 'int > 0 or None'."""
    parser = _Parser(text, 0)
    rule = parser.rule(stop=())
    if parser.peek() is not None:
        parser.fail('unexpected text after the rule')
    return rule


def _lookup_item(value: Any, path: str, where: str) -> Any:
    """The item of `value` at `where`, a path below `path` such as 'key[1][0]'."""
    for index in re.findall(r'\[(\d+)\]', where[len(path):]):
        value = value[int(index)]
    return value


class _Parser:
    """Recursive descent over the rule's tokens, starting at `start` in `text`."""

    def __init__(self, text: str, start: int) -> None:
        self.text, self.pos = text, start
        self.tokens: list[tuple[str, str, int, int]] = []  # (kind, text, start, end)
        pos = start
        while pos < len(text):
            if text[pos:].strip() == '':
                break
            match = _TOKEN.match(text, pos)
            if match is None:
                break  # prose after the rule; the parser stops at the closing parenthesis first
            kind = match.lastgroup
            assert kind is not None  # every branch of _TOKEN is a named group
            self.tokens.append((kind, match.group(kind), match.start(kind), match.end()))
            pos = match.end()
        self.tokens.append(('end', '', pos, pos))
        self.index = 0

    # ----- token access ----------------------------------------------------------------------
    def peek(self) -> Optional[str]:
        kind, token, _, _ = self.tokens[self.index]
        return None if kind == 'end' else token

    def take(self, *expected: str) -> str:
        token = self.peek()
        if expected and token not in expected:
            self.fail(f"expected {' or '.join(repr(e) for e in expected)}")
        if token is None:
            self.fail('the rule ends too early')
        self.index += 1
        return token

    def start(self) -> int:
        return self.tokens[self.index][2]

    def end(self) -> int:
        return self.tokens[self.index - 1][3]

    def fail(self, problem: str) -> NoReturn:
        at = self.text[self.tokens[self.index][2]:].strip()
        raise RuleSyntaxError(f"{problem} at {at[:30]!r}" if at else f'{problem} at the end')

    # ----- grammar ---------------------------------------------------------------------------
    def rule(self, stop: tuple[str, ...]) -> Rule:
        begin = self.start()
        alternatives = [self.alternative()]
        while self.peek() == 'or':
            self.take('or')
            alternatives.append(self.alternative())
        if self.peek() is not None and self.peek() not in stop:
            self.fail("expected 'or'" + ''.join(f" or {s!r}" for s in stop))
        return Rule(self.text[begin:self.end()].strip(), tuple(alternatives))

    def alternative(self) -> Alternative:
        begin = self.start()
        kind = self.take()
        if kind not in _TYPES:
            self.index -= 1
            self.fail(f"expected a type ({', '.join(_TYPES)})")
        bound: Optional[Bound] = None
        item: Optional[Rule] = None
        length: Optional[int] = None
        if kind in ('int', 'float'):
            bound = self.number_bound()
        elif kind == 'str':
            if self.peek() == 'in':
                bound = self.choice()
            elif self.peek() == 'matching':
                bound = self.matching()
        elif kind == 'list':
            self.take('[')
            item = self.rule(stop=(']',))
            self.take(']')
            if self.peek() == 'of':
                self.take('of')
                self.take('length')
                number = self.number()
                if not isinstance(number, int) or number < 0:
                    self.index -= 1
                    self.fail('a list length must be an int >= 0')
                length = number
        return Alternative(kind, self.text[begin:self.end()].strip(), bound, item, length)

    def number_bound(self) -> Optional[Bound]:
        token = self.peek()
        begin = self.start()
        if token in ('>', '>=', '<', '<='):
            self.take()
            limit, text = self.number(), self.text[begin:self.end()].strip()
            if token.startswith('>'):
                return Bound(text, low=limit, closed=(token == '>=', False))
            return Bound(text, high=limit, closed=(False, token == '<='))
        if token != 'in':
            return None
        self.take('in')
        if self.peek() == '{':
            self.index -= 1
            return self.choice()
        opening = self.take('[', '(')
        low = self.number()
        self.take(',')
        high = self.number()
        closing = self.take(']', ')')
        if low > high:
            self.index -= 1
            self.fail('an interval must have low <= high')
        return Bound(self.text[begin:self.end()].strip(), low=low, high=high,
                     closed=(opening == '[', closing == ']'))

    def choice(self) -> Bound:
        begin = self.start()
        self.take('in')
        self.take('{')
        choices = [self.value()]
        while self.peek() == ',':
            self.take(',')
            choices.append(self.value())
        self.take('}')
        return Bound(self.text[begin:self.end()].strip(), choices=tuple(choices))

    def matching(self) -> Bound:
        begin = self.start()
        self.take('matching')
        kind, token, _, _ = self.tokens[self.index]
        if kind != 'string':
            self.fail('expected a quoted pattern')
        self.take()
        try:
            re.compile(token[1:-1])
        except re.error as err:
            self.index -= 1
            self.fail(f'invalid pattern ({err})')
        return Bound(self.text[begin:self.end()].strip(), pattern=token[1:-1])

    def value(self) -> Any:
        kind, token, _, _ = self.tokens[self.index]
        if kind == 'string':
            self.take()
            return token[1:-1]
        return self.number()

    def number(self) -> Number:
        """A sum of terms, each a signed literal optionally raised to a power: `2**63 - 1`."""
        total = self.term()
        while self.peek() in ('+', '-'):
            sign = 1 if self.take() == '+' else -1
            total = total + sign * self.term()
        return total

    def term(self) -> Number:
        sign = 1
        if self.peek() == '-':
            self.take('-')
            sign = -1
        base = self.literal()
        if self.peek() == '**':
            self.take('**')
            base = base ** self.literal()
        return sign * base

    def literal(self) -> Number:
        kind, token, _, _ = self.tokens[self.index]
        if kind != 'number':
            self.fail('expected a number')
        self.take()
        if token == 'inf':
            return math.inf
        digits = token.replace('_', '')
        if re.fullmatch(r'\d+', digits):
            return int(digits)
        return float(digits)
