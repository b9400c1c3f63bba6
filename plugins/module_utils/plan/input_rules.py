# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an inventory value must be before it reaches a command line, a unit or a file name.

Each check returns the sentences that explain what is wrong (empty when the
value is fine), each naming the inventory variable and the host, so that the
planner reports every problem at once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import math
import re

# A line break or any other control character splits an ExecStart=, an
# environment line or a shell line: no value that ends up in one may hold one.
CONTROL = re.compile(u"[\x00-\x1f\x7f]")
# What a POSIX shell (the profile snippet sources the environment file) and
# systemd accept as a variable name.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Host names become file names (plan.yml writes one file per node).
HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
# Ports Ray itself takes on every node (ray start's defaults), and the range of
# its worker processes' ports (--min-worker-port 10002 --max-worker-port 19999).
RAY_FIXED_PORTS = {8265: "Ray's dashboard", 10001: "Ray's client server", 52365: "Ray's dashboard agent"}
RAY_WORKER_PORTS = (10002, 19999)
# Environment variables whose values are secrets (docs/security.md: "Secrets"): never in the
# plan, a command line, a 0644 file or Ansible's output; written to a 0600 file.
SECRET_ENV_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")
SECRET_ENV_SUFFIXES = tuple("_" + word for word in SECRET_ENV_WORDS)
# Environment variables that other inventory variables set.
OWNED_ENV = {"VLLM_API_KEY": "ascend_api_key"}


def _where(host):
    return " on host %s" % host if host else ""


def _leaves(value):
    """Every scalar inside a value, a mapping's keys included."""
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(key) + _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def control_characters(variable, value, host=None, secret=False):
    """A value, or anything inside it, with a line break or other control character.

    ``secret``: the sentence names the character but never the value."""
    for text in [leaf for leaf in _leaves(value) if isinstance(leaf, str)]:
        found = CONTROL.search(text)
        if found:
            shown = "" if secret else " in %r" % text
            return ["%s%s holds a control character (%r%s): control characters are refused in "
                    "everything written to a unit, an environment file or a command line (a line break splits it)"
                    % (variable, _where(host), found.group(0), shown)]
    return []


def secret_env_name(name):
    """True for a name whose value is a secret: *_TOKEN, *_KEY, *_SECRET, *_PASSWORD, any case."""
    upper = str(name).upper()
    return upper in SECRET_ENV_WORDS or upper.endswith(SECRET_ENV_SUFFIXES)


def split_env(env):
    """(public variables, secret variables) of ascend_extra_env; a non-mapping is all public."""
    if not isinstance(env, dict):
        return env, {}
    secret = dict((k, v) for k, v in env.items() if isinstance(k, str) and secret_env_name(k))
    return dict((k, v) for k, v in env.items() if k not in secret), secret


def extra_env(env):
    """ascend_extra_env: shell-safe names, one scalar value each; secrets' values never quoted."""
    problems = []
    for name in sorted(env, key=str):
        value = env[name]
        variable = "ascend_extra_env.%s" % name
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            problems.append("ascend_extra_env: %r is not an environment variable name (letters, digits and _, "
                            "not starting with a digit)" % (name,))
            continue
        secret = secret_env_name(name)
        if name in OWNED_ENV:
            problems.append("%s: set %s instead (the collection sets %s from it)" % (variable, OWNED_ENV[name], name))
        elif isinstance(value, bool):
            problems.append("%s is %r, a YAML boolean: quote the text the program expects ('1', 'true', 'on')"
                            % (variable, value))
        elif value is None:
            problems.append("%s is empty (null): give a value, or leave the variable out" % variable)
        elif not isinstance(value, (str, int, float)):
            found = kind_of(value) if secret else repr(value)
            problems.append("%s must be one string or number (found %s)" % (variable, found))
        else:
            problems.extend(control_characters(variable, str(value), secret=secret))
    return problems


def vaulted(value):
    """An inline-vaulted value as ansible-core before 2.19 hands it over: text, though not a str."""
    return hasattr(value, "_ciphertext")


def decrypted(value):
    """A vaulted value as its text."""
    return str(value) if vaulted(value) else value


def secret_env_summary(env):
    """{name: [problems]} for the secret variables of ascend_extra_env: what the planner may see of them."""
    _public, secret = split_env(env)
    return dict((name, extra_env({name: decrypted(value)})) for name, value in secret.items())


def host_name(name):
    """An inventory host name that is safe as a file name."""
    if not isinstance(name, str) or not HOST_NAME.fullmatch(name) or name in (".", ".."):
        return ["inventory host %r: its name becomes a file name (plan.yml writes one file per host): use letters, "
                "digits, '.', '_' and '-' only, starting with a letter, digit or '_'" % (name,)]
    return []


def ray_ports(ports, ray_port):
    """Ports of the plan that would collide with Ray's own under the Ray launcher.

    ``ports``: [(port, inventory variable)], the GCS port ``ray_port`` not among them.
    """
    problems = []
    # (A port equal to ascend_ray_port is already refused as a port used twice.)
    for port, variable in [(ray_port, "ascend_ray_port")] + list(ports):
        if port in RAY_FIXED_PORTS:
            problems.append("%s %d is %s%s: choose another port" % (
                variable, port, RAY_FIXED_PORTS[port], "" if variable == "ascend_ray_port" else " under the Ray launcher"))
        elif RAY_WORKER_PORTS[0] <= port <= RAY_WORKER_PORTS[1]:
            problems.append("%s %d is in the range Ray's workers take ports from (%d-%d) under the Ray launcher: "
                            "choose a port outside it" % ((variable, port) + RAY_WORKER_PORTS))
    return problems


def finite_numbers(variable, value):
    """Values with no JSON form, named: NaN and infinity (json.dumps writes NaN, which vLLM's parser refuses), and
    what YAML reads as a date, a time or binary data (ansible-core 2.19 hands over a tagged date no encoder takes)."""
    for leaf in _leaves(value):
        if isinstance(leaf, float) and (math.isnan(leaf) or math.isinf(leaf)):
            return ["%s holds %r: give a finite number" % (variable, leaf)]
        if isinstance(leaf, (datetime.date, datetime.time)):
            return ["%s holds %s, which YAML read as a %s: quote it to pass the text" % (
                variable, leaf.isoformat(), "time" if isinstance(leaf, datetime.time) else "date")]
        if isinstance(leaf, (bytes, bytearray)):
            return ["%s holds binary data (a !!binary value): give text" % variable]
        if leaf is not None and not isinstance(leaf, (str, int, float, bool)) and not vaulted(leaf):
            return ["%s holds a value of type %s, which has no JSON form: give text, a number, true or false"
                    % (variable, type(leaf).__name__)]
    return []


def non_text_keys(mapping, where):
    """(where, key) of every key that is not text, nested mappings included."""
    found = []
    for key, item in mapping.items():
        if not isinstance(key, str):
            found.append((where, key))
        elif isinstance(item, dict):
            found.extend(non_text_keys(item, "%s.%s" % (where, key)))
    return found


def kind_of(value):
    """What YAML made of a value, in the user's words (Ansible wraps the Python types)."""
    for kind, name in ((bool, "a boolean"), (int, "a number"), (float, "a decimal number"), (str, "text"),
                       (dict, "a mapping"), (list, "a list")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def key_problem(where, key):
    return ("%s has the key %r, %s: quote it (JSON keys are text, and YAML's 1, true and 1.0 would not stay "
            "apart)" % (where, key, kind_of(key)))


def json_object(variable, value):
    """A mapping that becomes one JSON object: text keys only, finite numbers, no control characters."""
    if not isinstance(value, dict):
        return []
    return [key_problem(where, key) for where, key in non_text_keys(value, variable)] \
        + finite_numbers(variable, value) + control_characters(variable, value)
