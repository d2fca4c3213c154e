"""The backends' flags, built from what each registered backend declares (``Backend.options``): the
command line knows no backend by name. ``evaluate`` and ``agent`` both add them with
:func:`add_backend_flags` and turn the parsed arguments into the chosen backend's keywords with
:func:`chosen_backend`."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from apibank.errors import UsageError
from apibank.generate.backends import BACKEND_REGISTRY
from apibank.generate.backends.choice import AUTO, choose_backend
from apibank.generate.backends.options import Option, declared_options, given_values, options_for


def model_backends() -> tuple[str, ...]:
    """The registered backends that run a model, read when the parser is built (so that a backend
    registered after import is offered too)."""
    return BACKEND_REGISTRY.names(scripted=False)


def backend_flags() -> dict[str, tuple[Option, list[str]]]:
    """``{flag: (option, backends taking it)}`` over every registered model backend."""
    return declared_options((name, BACKEND_REGISTRY.get(name)) for name in model_backends())


class _Pairs(argparse.Action):
    """A repeated ``KEY=VALUE`` flag, collected into one dict (a later KEY wins)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        key, value = values
        pairs = dict(getattr(namespace, self.dest, None) or {})
        pairs[key] = value
        setattr(namespace, self.dest, pairs)


def _argparse_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def add_backend_flags(group: argparse.ArgumentParser | argparse._ArgumentGroup, *, backend_help: str) -> None:
    """``--backend`` (default auto) and one flag per declared backend option, each not given by default
    (None), so that a flag given to a backend that does not take it can be refused."""
    group.add_argument("--backend", choices=(AUTO, *model_backends()), default=AUTO, help=backend_help)
    for flag, (option, owners) in backend_flags().items():
        shown_default = f" (default: {option.default})" if option.default not in (None, False, "") else ""
        kwargs: dict[str, Any] = {"dest": option.dest, "default": None,
                                  "help": f"{', '.join(owners)}: {option.help}{shown_default}"}
        if option.kind == "switch":
            kwargs.update(action="store_const", const=True)
        elif option.kind == "pairs":
            kwargs.update(action=_Pairs, type=_argparse_type(option.type), metavar=option.metavar)
        else:
            kwargs.update(type=_argparse_type(option.type), metavar=option.metavar, choices=option.choices)
        group.add_argument(flag, **kwargs)


def chosen_backend(args: argparse.Namespace, *, scripted: bool = False) -> tuple[str, str | None, dict[str, Any]]:
    """``(backend, why auto chose it or None, its constructor keywords)`` from the parsed arguments; every
    given backend flag's value is checked first. ``scripted`` (a gold-replaying model): the flags' values
    are checked, then any given is refused, and no backend is chosen."""
    flags = backend_flags()
    given = given_values(flags, vars(args))
    if scripted:
        refuse_for_scripted(args, list(given))
        return args.backend, None, {}
    backend, why = choose_backend(args.model, args.backend, given)
    if backend not in model_backends():
        raise UsageError(f"--backend {backend}: not a registered backend")
    return backend, why, options_for(backend, BACKEND_REGISTRY.get(backend), flags, given)


def calls_read_back(backend: str, model: str, options: dict[str, Any], *, way_out: str | None = None,
                    native_only: bool = False) -> Any:
    """The tools format's renderer (the tokenizer alone) once the run's reader has read back the calls its
    chat template writes (:mod:`apibank.generate.templates.readback`), before any weights load; None for a
    backend without a local chat template (an endpoint's is the server's). ``native_only``: no check where
    the template cannot take tools at all (``agent --tool-format auto`` then sends a text transcript);
    ``way_out`` is added to the error's ways out."""
    from apibank.generate.stops import tools_probe
    from apibank.generate.templates import TemplateRefusal
    from apibank.generate.templates.readback import CallsUnread

    backend_class = BACKEND_REGISTRY.get(backend)
    if not hasattr(backend_class, "check_calls_read"):
        return None
    renderer = backend_class.prompt_renderer(model, **options)
    if native_only:
        try:
            renderer.render(tools_probe())
        except TemplateRefusal:
            return None
    try:
        renderer.check_calls_read()
    except CallsUnread as error:
        if way_out is None:
            raise
        raise CallsUnread(f"{error}, or {way_out}") from None
    return renderer


def refuse_for_scripted(args: argparse.Namespace, given: list[str]) -> None:
    """A scripted model (``--model oracle``) runs no model: a backend flag given with it would be ignored
    without a word, so it is refused. (The decoding flags stay: a run records its decoding settings, which
    a resume compares.)"""
    named = (["--backend"] if args.backend != AUTO else []) + given
    if named:
        them = "it does" if len(named) == 1 else "they do"
        raise UsageError(f"{', '.join(named)}: --model {args.model} is scripted and runs no model, so {them} not "
                         f"apply; drop {' and '.join(named)}")
