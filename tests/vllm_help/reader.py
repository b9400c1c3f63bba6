"""The options of ``vllm serve`` as its stored ``--help=all`` text shows them.

The captures beside this file (vllm-VERSION-serve-help.txt, see README.md) are
what the real parser prints; this reader parses them with logic of its own so
that the tests can check the collection's option table
(plugins/module_utils/engines/vllm_options_X_Y_Z.py) and the serve test doubles
against vLLM rather than against that table.  It must not import the table.

``read_capture(version)`` gives ``{name: {"kind": kind, "choices": [...]}}``:
names as vLLM's dests (dashes as underscores), kind as argparse prints it:
``flag`` (``--x``), ``bool_optional`` (``--x, --no-x``, or ``--enable-x, --disable-x``
with ``negative`` naming the second), ``value`` (``--x X``
or ``--x [X]``) or ``multi`` (``--x X [X ...]``, ``--x [X ...]``); choices only
where the metavar is argparse's ``{a,b,c}`` and nothing else.
"""

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = re.compile(r"^vllm-(\d+(?:\.\d+)*)-serve-help\.txt$")
# argparse indents an option's invocation by two columns and its help text
# further; the help follows on the same line after two or more spaces.
OPTION_LINE = re.compile(r"^  (-{1,2}[A-Za-z0-9].*?)(?:\s{2,}.*)?$")
SECTION = re.compile(r"^\S.*:$")


def capture_path(version):
    return os.path.join(HERE, "vllm-%s-serve-help.txt" % version)


def captured_versions():
    """The vLLM versions with a capture here, oldest first."""
    found = [m.group(1) for m in (CAPTURE.match(name) for name in os.listdir(HERE)) if m]
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def read_capture(version):
    with open(capture_path(version)) as handle:
        return parse_help(handle.read())


def parse_help(text):
    options = {}
    in_section = False
    for line in text.splitlines():
        if SECTION.match(line):
            # "options:", "ModelConfig:", ...; the usage and description are outside, the epilog's
            # "--json-arg" examples are indented by three.
            in_section = True
        elif not line:
            continue
        elif in_section and line.startswith("  "):
            match = OPTION_LINE.match(line)
            if match:
                _add_invocation(options, match.group(1))
        elif not line.startswith(" "):
            in_section = False
    return options


def _add_invocation(options, invocation):
    """One option's "-s S, --long-name METAVAR" (or "-s, --long-name METAVAR", or "--x, --no-x") into options."""
    parts = {}
    for part in re.split(r", (?=-)", invocation):
        flag, _sep, metavar = part.partition(" ")
        parts[flag] = metavar
    longs = [flag for flag in parts if flag.startswith("--")]
    if not longs or longs == ["--help"]:
        return  # argparse's own -h/--help, which every parser adds
    name = longs[0][2:]
    # Python 3.12 and older repeat the metavar after every flag ("--x X, -x X"); 3.13 and later
    # print it once, after the last ("--x, -x X").
    metavar = next((m for m in parts.values() if m), "")
    inverse = _enable_disable_inverse(longs[0])
    if "--no-" + name in parts and not metavar:
        entry = {"kind": "bool_optional"}
    elif inverse in parts and not metavar:
        # vLLM 0.33 and later show --enable-x with --disable-x (--no-enable-x still parses, unshown).
        entry = {"kind": "bool_optional", "negative": inverse}
    elif not metavar:
        entry = {"kind": "flag"}
    else:
        entry = _value_entry(metavar)
    key = name.replace("-", "_")
    if key in options:
        raise ValueError("--%s is listed twice in the help text" % name)
    options[key] = entry


def _enable_disable_inverse(flag):
    for prefix, inverse in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
        if flag.startswith(prefix):
            return inverse + flag[len(prefix):]
    return None


def _value_entry(metavar):
    """How many values argparse's rendering of nargs shows, and the choices of "{a,b}"."""
    kind, single = "value", metavar
    for pattern, nargs_kind in ((r"^(.+) \[\1 \.\.\.\]$", "multi"),   # nargs="+"
                                (r"^\[(.+) \.\.\.\]$", "multi"),      # nargs="*"
                                (r"^\[(.+)\]$", "value"),             # nargs="?"
                                (r"^(\S+)(?: \1)+$", "multi")):       # nargs=N
        match = re.match(pattern, metavar)
        if match:
            kind, single = nargs_kind, match.group(1)
            break
    entry = {"kind": kind}
    choices = re.match(r"^\{([^{}]*)\}$", single)
    if choices:
        entry["choices"] = choices.group(1).split(",")  # in vLLM's order, as its errors list them
    return entry
