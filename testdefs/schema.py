"""The rules file format, as pydantic v2 models (one YAML document per file).

A rules file says, per upstream test file, which tests must pass, which are known failures
and why, and which do not apply to the device. See docs/testdefs.md for the prose version;
``json_schema()`` exports the same thing for editors.
"""
from __future__ import annotations

import enum
import re
from typing import Annotated, Any, ClassVar, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from testdefs.ids import DTYPE_NAMES

SCHEMA_VERSION = 1


class Mode(enum.StrEnum):
    """What the run expects of a test."""

    mandatory_success = "mandatory_success"  # must pass; a failure is a regression
    xfail = "xfail"  # known failure; passing is fine
    xfail_strict = "xfail_strict"  # known failure; passing fails the run so the entry gets promoted
    skip = "skip"  # collected but not run (e.g. it crashes the process)
    exclude = "exclude"  # not generated at all (test base) or deselected (pytest plugin)


class Category(enum.StrEnum):
    """Why a test is not expected to pass, as data the dashboard can group by."""

    unsupported_op = "unsupported_op"
    unsupported_dtype = "unsupported_dtype"
    numerics = "numerics"
    crash = "crash"
    upstream_bug = "upstream_bug"
    infra = "infra"
    flaky = "flaky"
    not_applicable = "not_applicable"
    timeout = "timeout"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _OneOrBoth(_Strict):
    """A section with two optional parts of which at least one must be given (an empty one says nothing)."""

    parts: ClassVar[tuple[str, str]]

    @model_validator(mode="after")
    def _one_given(self) -> _OneOrBoth:
        if all(getattr(self, part) in (None, []) for part in self.parts):
            raise ValueError(f"give {self.parts[0]}, {self.parts[1]} or both")
        return self


def _as_list(value: Any) -> Any:
    """Let a single value stand for a one-item list (``match: TestFoo::test_bar``)."""
    return [value] if isinstance(value, (str, int, float)) else value


def _as_text(value: Any) -> Any:
    """YAML reads ``since: 2.13`` as a float; keep it as the text the author wrote."""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _dtype_name(value: str) -> str:
    name = value.removeprefix("torch.")
    if name not in DTYPE_NAMES:
        raise ValueError(f"unknown dtype {value!r}; expected one of {', '.join(DTYPE_NAMES)}")
    return name


def _tag(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise ValueError(f"tag {value!r} is not a valid pytest marker name (letters, digits, _)")
    return value


def _pattern(value: str) -> str:
    if not value.strip():
        raise ValueError("empty pattern; expected a test name, Class::method, a glob or re:REGEX")
    if value.startswith("re:"):
        try:
            re.compile(value[3:])
        except re.error as exc:
            raise ValueError(f"regular expression {value[3:]!r} does not compile: {exc}") from None
    return value


def _specifier(value: str) -> str:
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        raise ValueError(f"{value!r} is not a version specifier; expected e.g. '>=2.14' or '>=2.13,<2.14'") from None
    return value


def _url(value: str) -> str:
    if not re.match(r"https?://\S+$", value):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value


DtypeName = Annotated[str, AfterValidator(_dtype_name)]
Tag = Annotated[str, AfterValidator(_tag)]
Pattern = Annotated[str, AfterValidator(_pattern)]
Text = Annotated[str, BeforeValidator(_as_text)]


class Precision(_OneOrBoth):
    """Tolerance override for assertEqual (the same meaning as upstream's ``toleranceOverride``)."""

    parts = ("atol", "rtol")
    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)


class Reason(_Strict):
    """Why a test has the mode it has: a category, words, and optionally an issue and a since."""

    category: Category
    text: str = Field(min_length=1)
    issue: Annotated[str, AfterValidator(_url)] | None = None
    since: Text | None = Field(default=None, description="torch version or date since when this holds")


class When(_Strict):
    """Conditions under which an entry applies."""

    torch: Annotated[str, AfterValidator(_specifier)] = Field(
        description="PEP 440 specifier on the torch version, e.g. '>=2.14'")


class DtypeFilter(_OneOrBoth):
    parts = ("include", "exclude")
    include: list[DtypeName] = Field(default_factory=list)
    exclude: list[DtypeName] = Field(default_factory=list)


class OpFilter(_OneOrBoth):
    """OpInfo names (``add``, ``linalg.norm``); a name also covers its variants (``div`` -> ``div.floor_rounding``)."""

    parts = ("include", "exclude")
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)


class Generate(_OneOrBoth):
    """Variants to generate although upstream's decorators leave them out (torch-spyre's ``include``).

    The device test base adds these dtypes to the test's ``@dtypes`` (or its ``@ops`` allowed
    dtypes) and these OpInfos (from ``op_db``) to its ``@ops`` list before torch instantiates it.
    """

    parts = ("dtypes", "ops")
    dtypes: list[DtypeName] = Field(default_factory=list)
    ops: list[str] = Field(default_factory=list)


_NEEDS_REASON = {Mode.xfail, Mode.xfail_strict, Mode.skip, Mode.exclude}


class Entry(_Strict):
    """Tests of one upstream file that share a mode and a reason."""

    match: Annotated[list[Pattern], BeforeValidator(_as_list)] = Field(
        min_length=1,
        description="test names: 'method', 'Class::method', a glob ('TestFoo::test_*') or 're:REGEX'; "
                    "matched against names with device class, device and dtype suffixes removed")
    mode: Mode
    reason: Reason | None = None  # required unless the mode is mandatory_success
    # where the entry applies: torch versions, then the variants of each matched test
    when: When | None = None
    dtypes: DtypeFilter | None = None
    ops: OpFilter | None = None
    # what it changes besides the mode
    precision: Precision | None = None
    generate: Generate | None = None
    tags: Annotated[list[Tag], BeforeValidator(_as_list)] = Field(default_factory=list)
    note: str | None = Field(default=None, description="free text for people (e.g. an imported comment)")

    @model_validator(mode="after")
    def _reason_for_non_success(self) -> Entry:
        if self.mode in _NEEDS_REASON and self.reason is None:
            raise ValueError(f"mode {self.mode.value} needs a reason: {{category, text}} (issue, since optional)")
        return self


class FileRules(_Strict):
    """The rules for one upstream test file."""

    path: str = Field(min_length=1, description="upstream test file, e.g. test/test_ops.py (a glob is allowed)")
    unlisted_test_mode: Mode = Field(description="mode of tests no entry matches; always explicit")
    note: str | None = Field(default=None, description="free text for people (e.g. an imported comment)")
    entries: list[Entry] = Field(default_factory=list)


class DtypeSpec(_Strict):
    name: DtypeName
    precision: Precision | None = None
    description: str | None = None


def _named(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


NamedDtype = Annotated[DtypeSpec, BeforeValidator(_named)]


class OpSpec(_Strict):
    name: str = Field(min_length=1, description="OpInfo name, e.g. add or linalg.norm")
    dtypes: list[NamedDtype] = Field(default_factory=list, description="empty: the global supported dtypes")
    precision: Precision | None = None
    description: str | None = None


class GlobalRules(_Strict):
    """What the device supports, for every upstream file."""

    supported_dtypes: list[NamedDtype] = Field(default_factory=list)
    supported_ops: list[Annotated[OpSpec, BeforeValidator(_named)]] = Field(default_factory=list)
    exclude_unsupported: bool = Field(
        default=False,
        description="exclude variants whose dtype or op is outside the supported lists, unless an entry "
                    "includes that dtype explicitly")


class RelevanceRule(_OneOrBoth):
    """Upstream source paths whose change makes these tests or ops worth running."""

    parts = ("tests", "ops")
    sources: Annotated[list[str], BeforeValidator(_as_list)] = Field(
        min_length=1, description="globs on upstream paths; '*' also crosses '/'")
    tests: Annotated[list[str], BeforeValidator(_as_list)] = Field(
        default_factory=list, description="test files or test id patterns")
    ops: Annotated[list[str], BeforeValidator(_as_list)] = Field(default_factory=list, description="OpInfo names")


class Relevance(_Strict):
    rules: list[RelevanceRule] = Field(default_factory=list)
    always_run: list[str] = Field(default_factory=list, description="test id patterns that always run")


class RulesDocument(_Strict):
    """One rules file."""

    version: Literal[1] = SCHEMA_VERSION
    global_: GlobalRules | None = Field(default=None, alias="global")
    relevance: Relevance | None = None
    files: list[FileRules] = Field(default_factory=list)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a rules file (by YAML key names), for editors and `relay-cli testdefs schema`."""
    schema = RulesDocument.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Spyre CI Relay testdefs rules file"
    return schema
