"""The tool base class and the result envelope.

A tool is one small class: a declarative schema (``name``, ``description``, ``input_parameters``,
``output_parameters``: the upstream prompt data, byte-exact), an optional ``database``, a ``run``
method holding the tool's own logic, and ``check``, the benchmark's correctness check.

Two kinds of failure are kept apart, as upstream does:

* a *rejection* (:class:`CallRejected`) happens before the tool runs: unknown tool, undeclared or
  badly typed parameter, missing argument. It produces no result envelope.
* a *tool failure* happens inside ``run``. Upstream tools catch every error raised by their own
  logic and report its text in the envelope's ``exception`` field; :meth:`Tool.execute` does the
  same, so ``run`` simply raises (:class:`ToolError` for deliberate failures).

Judges never name a tool: what they need to know about one, each tool class declares (the section
"what judges read" of :class:`Tool`): the databases a call may modify, the in-memory records that
are state and those that are not, whether a successful call acts outside the environment, whether
its results carry random values, parameters renamed since the annotation, and what it reads once
per process (:meth:`Tool.preload`). A test over the registry checks each declaration against what
the tool's recorded gold calls really do.
"""

from __future__ import annotations

import copy
import random
from typing import Any, ClassVar, Protocol

from .data import DataSource
from .errors import EnvironmentUnavailable

Record = dict[str, Any]


class ToolHost(Protocol):
    """What a tool sees of its session (``environment.Session`` is the implementation).

    Declared here so that the base class does not import the environment that imports it.
    """

    rng: random.Random
    data: Any  # environment.PristineData: ``data.source`` is where the files come from

    @property
    def retriever(self) -> Any: ...

    def store(self, name: str, *, writable: bool = True) -> Any: ...

    def resolve_token(self, token: Any) -> str: ...


class ToolError(Exception):
    """A deliberate failure of a tool; its text becomes the envelope's ``exception``."""


class CallRejected(Exception):
    """The call never reached the tool (upstream raised outside the tool's catch-all).

    ``kind`` is one of ``unknown_tool``, ``invalid_parameter_name``, ``invalid_parameter_type``,
    ``invalid_value`` (the original evaluator crashed on it) and ``missing_argument``. The message
    is upstream's text. ``raised`` is the class of the exception upstream's own code raised for the
    call (a ValueError from ``int``, the TypeError of a failed lookup), when it raised one: the
    level-3 evaluator catches TypeError and counts it apart, so judges tell rejections apart by it.
    """

    def __init__(
        self, kind: str, message: str, parameter: str | None = None, *, raised: type[BaseException] | None = None
    ):
        super().__init__(message)
        self.kind = kind
        self.parameter = parameter
        self.raised = raised


class CallTimeout(BaseException):
    """A call ran past its time budget. A BaseException so that no tool catch-all swallows it."""


def missing_argument_message(missing: list[str]) -> str:
    """CPython's text for a call that lacks required keyword-passable arguments."""
    quoted = [f"'{name}'" for name in missing]
    if len(quoted) == 1:
        names = quoted[0]
    elif len(quoted) == 2:
        names = f"{quoted[0]} and {quoted[1]}"
    else:
        names = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    plural = "argument" if len(missing) == 1 else "arguments"
    return f"call() missing {len(missing)} required positional {plural}: {names}"


class Tool:
    """Base class of every API-Bank tool. Subclasses are registered in a :class:`ToolSet`."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_parameters: ClassVar[dict[str, dict[str, str]]]
    output_parameters: ClassVar[dict[str, dict[str, str]]]
    # init_database/<database>.json, shared by every tool of a session that names the same file.
    database: ClassVar[str | None] = None
    # Parameters with a default in upstream's call signature (all others are required).
    defaults: ClassVar[dict[str, Any]] = {}
    # CheckToken, DeleteAccount, ForgotPassword and RegisterUser envelopes lack ``api_name``.
    envelope_has_api_name: ClassVar[bool] = True
    # Upstream module file name, which fixes the ToolSearcher catalogue order.
    module_name: ClassVar[str] = ""

    # ------------------------------------------------------------------ what judges read
    # The databases (``init_database`` names) a call may modify; empty for a tool that only reads.
    writes: ClassVar[tuple[str, ...]] = ()
    # Instance attributes holding in-memory records that are part of the world's state (a table the
    # tool keeps itself, a pending verification step): compared like databases by state judges.
    state_records: ClassVar[tuple[str, ...]] = ()
    # Instance attributes a call changes as a side effect nobody asked for (upstream's searches
    # rewrite a matched record's dates into text in place): never state, so such calls are reads.
    incidental_records: ClassVar[tuple[str, ...]] = ()
    # A successful call acts outside the environment (an email sent, music played) and changes no
    # record: judges count each such call as an effect of its own.
    external_effect: ClassVar[bool] = False
    # Results carry values drawn from the session's random generator (ids, tokens). Such a tool
    # overrides :meth:`adopt`; judges compare those values by where they occur, not by content.
    generates_random_values: ClassVar[bool] = False
    # Parameters renamed since the dialogues were annotated: recorded name -> current name.
    renamed_parameters: ClassVar[dict[str, str]] = {}

    def __init__(self, session: ToolHost) -> None:
        self.session = session

    # ----------------------------------------------------------------------------- execution
    def execute(self, arguments: dict[str, Any]) -> Record:
        """Run with already-coerced ``arguments`` and return the result envelope."""
        missing = [p for p in self.input_parameters if p not in arguments and p not in self.defaults]
        if missing:
            raise CallRejected("missing_argument", missing_argument_message(missing), missing[0])
        values = {**self.defaults, **arguments}
        record: Record = {}
        if self.envelope_has_api_name:
            record["api_name"] = self.name
        record["input"] = self.echo_input(values)
        try:
            output = self.run(**values)
        except EnvironmentUnavailable:  # missing data or model: the environment's failure, not the call's
            raise
        except Exception as error:  # upstream tools report every failure of their own logic
            record["output"] = None
            record["exception"] = str(error)
        else:
            record["output"] = output
            record["exception"] = None
        return record

    def echo_input(self, values: dict[str, Any]) -> Any:
        """The envelope's ``input``: declared parameters in declaration order, values as received."""
        return {p: values[p] for p in self.input_parameters if p in values}

    def run(self, **arguments: Any) -> Any:
        raise NotImplementedError

    def adopt(self, executed: Record, recorded: Record) -> None:
        """After replaying a gold call, make this session's state match the recorded result.

        Only tools that declare ``generates_random_values`` override this: the replayed call
        produced a fresh random value, and later calls of the dialogue refer to the recorded one.
        """

    @classmethod
    def preload(cls, source: DataSource) -> None:
        """Read now what the tool would read on first use and keep for the whole process.

        Nothing by default. Tools that answer from recorded results read them once per data source;
        a judge that runs calls in forked worker processes calls this in the parent first, so that
        the reading is not repeated (and lost) in every worker.
        """

    @classmethod
    def current_arguments(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        """``arguments`` (a copy) with parameters renamed since the annotation given their current
        name, in place; a recorded name is kept when the current one is given too."""
        renames = cls.renamed_parameters
        if not renames:
            return dict(arguments)
        return {
            (renames[key] if key in renames and renames[key] not in arguments else key): value
            for key, value in arguments.items()
        }

    # ------------------------------------------------------------------------------ judging
    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """The original benchmark's check, quirks included (it may edit the records in place)."""
        raise NotImplementedError

    @classmethod
    def check_corrected(cls, response: Record, gold: Record) -> bool:
        """The check without upstream's judging bugs. Never edits its arguments.

        By default: the original check on private copies, where a missing key or a failed name
        assertion means "incorrect". Tools whose original check has a real bug override this.
        """
        try:
            return bool(cls.check(copy.deepcopy(response), copy.deepcopy(gold)))
        except (KeyError, AssertionError):
            return False

    # ------------------------------------------------------------------------------ schema
    @classmethod
    def descriptor(cls) -> dict[str, Any]:
        """The upstream description object, keys in upstream order."""
        return {
            "name": cls.name,
            "description": cls.description,
            "input_parameters": cls.input_parameters,
            "output_parameters": cls.output_parameters,
        }

    @classmethod
    def required_parameters(cls) -> list[str]:
        return [p for p in cls.input_parameters if p not in cls.defaults]


# ---------------------------------------------------------------------------------- check helpers
def fields_equal(response: Record, gold: Record, *keys: str) -> bool:
    """True when every named top-level envelope field is equal (``output``, ``exception``, ``input``)."""
    return all(response[key] == gold[key] for key in keys)


def assert_same_api(response: Record, gold: Record) -> None:
    """The 'name assert' some upstream checks start with."""
    if response["api_name"] != gold["api_name"]:
        raise AssertionError("The API name is not correct.")
