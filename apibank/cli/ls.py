"""``apibank ls``: the tools of both tool sets, from the registry."""

from __future__ import annotations

import argparse
import json

from apibank_tools.registry import TOOLSETS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--toolset", choices=sorted(TOOLSETS), help="only this tool set")
    parser.add_argument("--json", action="store_true", help="print the JSON schemas instead")


def run(args: argparse.Namespace) -> int:
    names = [args.toolset] if args.toolset else list(TOOLSETS)
    if args.json:
        print(json.dumps({n: TOOLSETS[n].json_schemas() for n in names}, indent=2))
        return 0
    for set_name in names:
        tools = TOOLSETS[set_name]
        print(f"{set_name} ({len(tools)} tools)")
        for tool_name in tools:
            cls = tools.get(tool_name)
            params = ", ".join(f"{p}: {s['type']}" for p, s in cls.input_parameters.items())
            print(f"  {tool_name}({params})")
    return 0
