# -*- coding: utf-8 -*-
"""The option table the planner validates against, checked against the real `vllm serve --help=all`.

The captures in tests/vllm_help come from vLLM's own parser (tools/extract_vllm_serve_options.py
--help-text); the reader there parses them without the table.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import contextlib
import io

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.vllm_serve_options import SERVE_OPTIONS, VLLM_VERSION

# vLLM gives this option a metavar that lists the modules alone, while its
# parser also takes two of them joined by a comma ("model,worker").
COMMA_JOINED_CHOICES = {"collect_detailed_traces"}


@pytest.fixture(scope="module", name="captured")
def captured_options(vllm_help):
    assert VLLM_VERSION in vllm_help.captured_versions(), (
        "no tests/vllm_help/vllm-%s-serve-help.txt: capture it with tools/extract_vllm_serve_options.py --help-text"
        % VLLM_VERSION)
    return vllm_help.read_capture(VLLM_VERSION)


def test_same_option_names(captured):
    missing = sorted(set(captured) - set(SERVE_OPTIONS))
    unknown = sorted(set(SERVE_OPTIONS) - set(captured))
    assert not missing and not unknown, "vLLM %s has options the table lacks: %s; the table has options vLLM lacks: %s" % (
        VLLM_VERSION, ", ".join(missing) or "none", ", ".join(unknown) or "none")


def test_same_kinds(captured):
    differ = ["%s (table %s, vLLM %s)" % (name, SERVE_OPTIONS[name]["kind"], captured[name]["kind"])
              for name in sorted(set(captured) & set(SERVE_OPTIONS))
              if SERVE_OPTIONS[name]["kind"] != captured[name]["kind"]]
    assert not differ, "kinds differ from vLLM %s's help: %s" % (VLLM_VERSION, "; ".join(differ))


def test_same_choices(captured):
    differ = []
    for name in sorted(set(captured) & set(SERVE_OPTIONS)):
        table, shown = set(SERVE_OPTIONS[name].get("choices", [])), set(captured[name].get("choices", []))
        if name in COMMA_JOINED_CHOICES:
            joined = {c for c in table - shown if set(c.split(",")) <= shown and len(set(c.split(","))) > 1}
            table -= joined
        if table != shown:
            differ.append("%s (table only: %s; vLLM only: %s)" % (
                name, ", ".join(sorted(table - shown)) or "-", ", ".join(sorted(shown - table)) or "-"))
    assert not differ, "choices differ from vLLM %s's help: %s" % (VLLM_VERSION, "; ".join(differ))


def test_reader_reads_what_argparse_prints(vllm_help, monkeypatch):
    """The reader against Python's own argparse output, for every form the captures use."""
    parser = argparse.ArgumentParser(prog="vllm serve")
    parser.add_argument("model_tag", nargs="?")
    parser.add_argument("--headless", action="store_true")
    parser.add_argument("--enable-x", action=argparse.BooleanOptionalAction, help="Switch. Next -- line: --not-an-option")
    parser.add_argument("--port", type=int, help="Port number.")
    parser.add_argument("--tensor-parallel-size", "-tp", type=int)
    parser.add_argument("--block-size", type=int, choices=[1, 8, 16])
    parser.add_argument("--hf-token", nargs="?")
    parser.add_argument("--api-key", nargs="+")
    parser.add_argument("--patterns", nargs="*")
    parser.add_argument("--pair", nargs=2)
    parser.add_argument("--traces", nargs="+", choices=["all", "model"])
    parser.add_argument("--config-format", metavar=str(["auto", "hf"]))
    parser.add_argument("--tool-call-parser", metavar="{hermes,xlam} or name registered in --tool-parser-plugin")
    parser.epilog = "When passing JSON CLI arguments:\n   --json-arg.key1 value1"
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    monkeypatch.setenv("COLUMNS", "200")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        parser.print_help()
    assert vllm_help.parse_help(text.getvalue()) == {
        "headless": {"kind": "flag"},
        "enable_x": {"kind": "bool_optional"},
        "port": {"kind": "value"},
        "tensor_parallel_size": {"kind": "value"},
        "block_size": {"kind": "value", "choices": ["1", "8", "16"]},
        "hf_token": {"kind": "value"},
        "api_key": {"kind": "multi"},
        "patterns": {"kind": "multi"},
        "pair": {"kind": "multi"},
        "traces": {"kind": "multi", "choices": ["all", "model"]},
        "config_format": {"kind": "value"},
        "tool_call_parser": {"kind": "value"},
    }, text.getvalue()
