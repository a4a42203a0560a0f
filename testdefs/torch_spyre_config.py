"""torch-spyre's ``test_suite_config`` format, read strictly: the documented keys only, names as
torch-spyre accepts them, every problem with file:line.

The models follow the schema torch-spyre documents (RFC 1287 and its config models: see
docs/testdefs.md, "torch-spyre compatibility"); they are written for the importer, not taken from
torch-spyre. Keys torch-spyre documents but does not implement yet (``selectors``,
``global.devices``) are accepted so real configs load; the importer reports them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from testdefs.errors import Problem
from testdefs.ids import DTYPE_NAMES
from testdefs.pydantic_problems import validation_problems
from testdefs.safe_yaml import LineIndex, parse_yaml, read_file

SpyreMode = Literal["mandatory_success", "xfail", "xfail_strict", "skip"]
_NAME = re.compile(r"(?:[A-Za-z_]\w*::)?[A-Za-z_]\w*")
PATH_TOKEN = re.compile(r"^\$\{(TORCH_ROOT|PYTORCH_ROOT|TORCH_DEVICE_ROOT|TORCH_SPYRE_ROOT)\}/")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _named(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


def _dtype(value: Any) -> Any:
    if isinstance(value, str) and value.removeprefix("torch.") not in DTYPE_NAMES:
        raise ValueError(f"unknown dtype {value!r}; expected one of {', '.join(DTYPE_NAMES)}")
    return value.removeprefix("torch.") if isinstance(value, str) else value


SpyreDtype = Annotated[str, BeforeValidator(_dtype)]


class Precision(_Model):
    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)


class DtypeItem(_Model):
    name: SpyreDtype
    description: str | None = None
    precision: Precision | None = None
    force_xfail: bool = False


NamedDtype = Annotated[DtypeItem, BeforeValidator(_named)]


class OpItem(_Model):
    name: str = Field(min_length=1)
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    sample_inputs_func: dict[str, Any] | None = None


class ModuleItem(_Model):
    name: str = Field(min_length=1)
    module_path: str | None = None
    description: str | None = None
    constructor_inputs: Any = None
    forward_inputs: Any = None


class OpEdits(_Model):
    include: list[Annotated[OpItem, BeforeValidator(_named)]] = Field(default_factory=list)
    exclude: list[Annotated[OpItem, BeforeValidator(_named)]] = Field(default_factory=list)


class DtypeEdits(_Model):
    include: list[NamedDtype] = Field(default_factory=list)
    exclude: list[NamedDtype] = Field(default_factory=list)


class ModuleEdits(_Model):
    include: list[Annotated[ModuleItem, BeforeValidator(_named)]] = Field(default_factory=list)
    exclude: list[Annotated[ModuleItem, BeforeValidator(_named)]] = Field(default_factory=list)


class FunctionItem(_Model):
    name: str = Field(min_length=1)


class Functions(_Model):
    cpu_move: list[Annotated[FunctionItem, BeforeValidator(_named)]] = Field(default_factory=list)


class Edits(_Model):
    ops: OpEdits | None = None
    dtypes: DtypeEdits | None = None
    modules: ModuleEdits | None = None
    functions: Functions | None = None
    inputs: dict[str, Any] | None = None


class TestItem(_Model):
    __test__ = False  # not a pytest class

    names: list[str] = Field(min_length=1)
    mode: SpyreMode | None = None
    description: str | None = None
    tags: list[str | int] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    edits: Edits | None = None
    selectors: dict[str, Any] | None = None  # documented as planned

    @field_validator("names")
    @classmethod
    def _names(cls, names: list[str], info: ValidationInfo) -> list[str]:
        allow_regex = bool(info.context and info.context.get("allow_regex"))
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise ValueError("every name must be a test name: Class::method or method")
            if not _NAME.fullmatch(name) and not allow_regex:
                raise ValueError(f"{name!r} is not a test name (Class::method or method); torch-spyre would "
                                 "read it as a regular expression. Import with --allow-regex to keep it as one")
        return names


class FileItem(_Model):
    path: str = Field(min_length=1)
    unlisted_test_mode: SpyreMode | None = None
    description: str | None = None
    tests: list[TestItem] = Field(default_factory=list)


class OpSupport(_Model):
    name: str = Field(min_length=1)
    description: str | None = None
    force_xfail: bool = False
    dtypes: list[NamedDtype] = Field(default_factory=list)


class ModuleSupport(_Model):
    name: str = Field(min_length=1)
    force_xfail: bool = False
    dtypes: list[NamedDtype] = Field(default_factory=list)
    constructor_inputs: Any = None
    forward_inputs: Any = None


class InputConfig(_Model):
    seed: int | None = None


class GlobalSection(_Model):
    supported_dtypes: list[NamedDtype] = Field(default_factory=list)
    supported_ops: list[Annotated[OpSupport, BeforeValidator(_named)]] = Field(default_factory=list)
    supported_modules: list[Annotated[ModuleSupport, BeforeValidator(_named)]] = Field(default_factory=list)
    input_config: InputConfig | None = None
    devices: Any = None  # documented as planned


class SuiteConfig(_Model):
    labels: list[str] = Field(default_factory=list)
    files: list[FileItem] = Field(default_factory=list)
    global_: GlobalSection | None = Field(default=None, alias="global")


class ConfigDocument(_Model):
    test_suite_config: SuiteConfig


@dataclass
class LoadedConfig:
    """A validated config, its raw data (for the lines of each part) and its text (for comments)."""

    name: str
    text: str
    data: dict
    lines: LineIndex
    config: SuiteConfig


class ConfigError(ValueError):
    """The input is not a valid torch-spyre config; ``problems`` has one file:line line each."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


def load_config_text(text: str, name: str, *, allow_regex: bool = False) -> LoadedConfig:
    parsed = parse_yaml(text, name, index_objects=True)
    if parsed.problems:
        raise ConfigError(parsed.problems)
    data = parsed.data
    if not isinstance(data, dict) or "test_suite_config" not in data:
        raise ConfigError([Problem(name, parsed.lines.root_line, "", "expected a mapping with the key "
                                   "test_suite_config (a torch-spyre config)")])
    try:
        document = ConfigDocument.model_validate(data, context={"allow_regex": allow_regex})
    except ValidationError as exc:
        raise ConfigError(validation_problems(exc, name, parsed.lines, ConfigDocument)) from None
    return LoadedConfig(name, text, data, parsed.lines, document.test_suite_config)


def load_config(path: Path, name: str | None = None, *, allow_regex: bool = False) -> LoadedConfig:
    name = name or str(path)
    text, problem = read_file(path, name)
    if problem is not None:
        raise ConfigError([problem])
    return load_config_text(text, name, allow_regex=allow_regex)


def upstream_path(path: str) -> str:
    """``${TORCH_ROOT}/test/test_view_ops.py`` -> ``test/test_view_ops.py``."""
    return PATH_TOKEN.sub("", path)
