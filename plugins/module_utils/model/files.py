# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model at ascend_model on every node: its manifest (file, size, sha256), the checks against it (quick:
names and sizes; full: every file hashed again), who copies from whom (the fan-out, in rounds), and the rsync
command lines and daemon configuration of one copy. Pure but for the file reads of walk() and hash_files()."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re
import stat
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.ascend.inference.plugins.module_utils.model import swarm
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import read

FORMAT = 1
# rsync --partial-dir: where an interrupted file waits to be resumed (relative: one per directory).
PARTIAL_DIR = ".ascend-model-partial"
# While a file arrives, rsync writes it as ".<name>.XXXXXX" beside its final name.
_TEMPORARY = re.compile(r"^\.(.+)\.[A-Za-z0-9]{6}$")
# One copy's daemon configuration, secrets and output; a tmpfs, so a reboot forgets them too.
RUNTIME_DIR = "/run/ascend-inference/model"
RSYNC_MODULE = "model"
RSYNC_USER = "ascend-model"
_CHUNK = 4 << 20
# What every copy passes: files with their times (a later run's rsync then skips them by size and time),
# links followed, readable by every account (the service account reads the model), interrupted files kept,
# hidden entries at the top left out (see walk()).
COPY_OPTIONS = ["--recursive", "--copy-links", "--times", "--chmod=D0755,F0644", "--partial",
                "--partial-dir=" + PARTIAL_DIR, "--exclude=/.*", "--stats"]


def make_model_dir(path):
    """The model directory where a node had none, 0755 whatever the umask (the engine's user reads it)."""
    if not os.path.isdir(path):
        os.makedirs(path, 0o755)
        os.chmod(path, 0o755)


def walk(root, broken=None):
    """{relative path: (size, mtime_ns)} of the regular files under root, links followed (each directory
    once, so a link loop ends), the partial directories left out. A link that leads nowhere is skipped (and
    its path added to ``broken``, a list, where given).

    Hidden entries at the top are not part of the model: a hub download's metadata (.cache/), a clone's
    .git/ (whose LFS objects would double the weights). Only rsync's temporary files among them are kept,
    to count a copy under way and clean one cut off; build_manifest() and compare() pass them over."""
    found = {}
    seen = set()
    for directory, subdirs, names in os.walk(root, followlinks=True):
        try:
            info = os.stat(directory)
        except OSError:
            subdirs[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:
            subdirs[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        top = directory == root
        subdirs[:] = sorted(name for name in subdirs if name != PARTIAL_DIR and not (top and name.startswith(".")))
        for name in names:
            # rsync's temporary file of a top-level file is hidden too: kept, to count and clean it.
            if top and name.startswith(".") and not _TEMPORARY.match(name):
                continue
            full = os.path.join(directory, name)
            try:
                info = os.stat(full)
            except OSError:
                if broken is not None and os.path.islink(full):
                    broken.append(os.path.relpath(full, root))
                continue
            if stat.S_ISREG(info.st_mode):
                found[os.path.relpath(full, root)] = (info.st_size, info.st_mtime_ns)
    return found


def _hidden_at_top(path):
    return os.sep not in path and path.startswith(".")


def temporary_of(path):
    """The file an rsync temporary file (".<name>.XXXXXX") is becoming, or None."""
    directory, name = os.path.split(path)
    match = _TEMPORARY.match(name)
    return os.path.join(directory, match.group(1)) if match else None


def transient(found):
    """The paths of found that are rsync temporary files of another found path (a copy under way or cut off)."""
    return set(path for path in found if temporary_of(path) in found)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def hash_files(root, paths, workers=None):
    """{path: sha256 hex, or None when it cannot be read}, several files at once (hashlib releases the GIL
    while it hashes, so threads use the node's cores)."""
    def one(path):
        try:
            return path, sha256_file(os.path.join(root, path))
        except (IOError, OSError):
            return path, None
    workers = workers or min(8, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return dict(pool.map(one, sorted(paths)))


def digest(files):
    """One sha256 over every (path, size, sha256) in path order: equal digests, equal models."""
    lines = ["%s\0%d\0%s\n" % (f["path"], f["size"], f["sha256"]) for f in sorted(files, key=lambda f: f["path"])]
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def build_manifest(found, cached=None, rehash=False, hasher=None):
    """The manifest of the files found (walk()): {format, files: [{path, size, mtime_ns, sha256}], count,
    bytes, digest}, and what it cost: {hashed, reused, changed, unreadable}.

    A file whose size and time equal a cached manifest's entry keeps that entry's sha256 (a model is hashed
    once, not on every run) unless ``rehash``; ``changed`` names the rehashed files whose content is not the
    cached one's. Without a ``hasher`` nothing is hashed: files not in the cache get a sha256 of None and
    the manifest no digest (check mode reads sizes only)."""
    moving = transient(found)
    files = dict((path, entry) for path, entry in found.items() if path not in moving and not _hidden_at_top(path))
    previous = {}
    if isinstance(cached, dict) and cached.get("format") == FORMAT:
        previous = dict((f["path"], f) for f in cached.get("files", []))
    reused, todo = {}, []
    for path, (size, mtime) in files.items():
        old = previous.get(path)
        if not rehash and old and old.get("sha256") and old["size"] == size and old["mtime_ns"] == mtime:
            reused[path] = old["sha256"]
        else:
            todo.append(path)
    hashed = hasher(todo) if hasher and todo else {}
    entries = [{"path": path, "size": size, "mtime_ns": mtime, "sha256": reused.get(path) or hashed.get(path)}
               for path, (size, mtime) in sorted(files.items())]
    complete = all(entry["sha256"] for entry in entries)
    manifest = {"format": FORMAT, "files": entries, "count": len(entries),
                "bytes": sum(entry["size"] for entry in entries), "digest": digest(entries) if complete else None}
    cost = {"hashed": len(hashed), "reused": len(reused),
            "changed": sorted(path for path in hashed if path in previous and hashed[path]
                              and previous[path].get("sha256") not in (None, hashed[path])),
            "unreadable": sorted(path for path in todo if hasher and not hashed.get(path))}
    return manifest, cost


def record(manifest, path):
    """What a node keeps about the model it holds (the manifest and where): the preflight and later runs read it."""
    return dict(manifest, path=path)


def write_record(record_path, saved):
    """The node's record, 0644, replaced whole (never half written)."""
    directory = os.path.dirname(record_path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    with open(record_path + ".tmp", "w") as handle:
        json.dump(saved, handle, sort_keys=True)
    os.chmod(record_path + ".tmp", 0o644)
    os.rename(record_path + ".tmp", record_path)


def record_checked_copy(manifest, path, record_path, found):
    """After a copy that checked every piece as it arrived: the node's files (``found``, walk() of path, which the
    caller made) against the manifest by names and sizes (the quick check) and, when they match, the node's
    record written as model_check writes it (no second reading of the files). compare()'s result, with
    ``recorded``."""
    result = compare(manifest, found)
    result["recorded"] = False
    if manifest.get("digest") and not (result["missing"] or result["wrong_size"] or result["extra"]):
        saved = record(manifest, path)
        if read_record(read(record_path), path) != saved:
            write_record(record_path, saved)
        result["recorded"] = True
    return result


def read_record(text, path):
    """The record in text when it is one of this format for the model at path, else None."""
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("format") == FORMAT and data.get("path") == path \
            and isinstance(data.get("files"), list):
        return data
    return None


def compare(manifest, found):
    """A node's files (walk()) against the manifest, by names and sizes (the quick check): missing,
    wrong_size [{path, size, expected}], extra (files the manifest does not hold), transient (rsync's
    temporary files of manifest files) and bytes_missing (what a copy must bring)."""
    want = dict((f["path"], f["size"]) for f in manifest["files"])
    missing = sorted(path for path in want if path not in found)
    wrong = [{"path": path, "size": found[path][0], "expected": want[path]}
             for path in sorted(want) if path in found and found[path][0] != want[path]]
    moving = sorted(path for path in found if path not in want and temporary_of(path) in want)
    extra = sorted(path for path in found if path not in want and path not in moving and not _hidden_at_top(path))
    return {"missing": missing, "wrong_size": wrong, "extra": extra, "transient": moving,
            "bytes_missing": sum(want[path] for path in missing) + sum(w["expected"] for w in wrong)}


def bytes_present(manifest, found, partial_sizes):
    """How much of the model a node holds while a copy runs: the manifest files of the right size, plus the
    files on their way (rsync's temporary files and the partial directories' files, ``partial_sizes``:
    {manifest path: size})."""
    want = dict((f["path"], f["size"]) for f in manifest["files"])
    done = sum(size for path, size in want.items() if path in found and found[path][0] == size)
    moving = {}
    for path in found:
        target = temporary_of(path)
        if target in want and not (target in found and found[target][0] == want[target]):
            moving[target] = max(moving.get(target, 0), found[path][0])
    for path, size in partial_sizes.items():
        if path in want and not (path in found and found[path][0] == want[path]):
            moving[path] = max(moving.get(path, 0), size)
    return done + sum(min(size, want[path]) for path, size in moving.items())


def partial_path(path):
    """Where rsync keeps the interrupted copy of the manifest path ``path``."""
    directory, name = os.path.split(path)
    return os.path.join(directory, PARTIAL_DIR, name)


def schedule(order, complete, source=None, fanout=True, pipeline="never"):
    """Who copies from whom, in rounds.

    ``order``: the play's hosts in order; ``complete``: those that hold the whole model; ``source``: a host
    that is the model's source (it holds it by definition), or None for the controller, which sends once.
    With ``fanout`` every node that holds the model sends it to one more node per round (the holders double
    each round); without, the source sends to every node at once. Receivers are served in ``order``, so a
    receiver waits only for hosts before it (Ansible starts hosts in that order, whatever its forks).

    Returns {transfers: [{host, seeder (None: the controller), round, after (the seeder's previous receiver,
    which must be done first, or None), wait_for (those of seeder and after that receive in this plan),
    serves (it sends to others after)}], seeds (hosts that send from the start), rounds, lines (one per
    round, "round 2: node1 -> node2, node1 -> node3"), pipelined}.

    ``pipeline`` (model_pipeline: auto, always, never) makes it one swarm (swarm.pipelined): every node that
    lacks the model receives from every holder at once, the holders (and the controller) seed from the start.
    """
    holders = [host for host in order if host in complete or host == source]
    waiting = [host for host in order if host not in holders]
    transfers, previous = [], {}
    if not waiting:
        return {"transfers": [], "seeds": [], "rounds": 0, "lines": [], "pipelined": False}
    if swarm.pipelined(pipeline, len(waiting)):
        senders = (["the controller"] if source is None else []) + holders
        transfers = [{"host": host, "seeder": None, "round": 1, "after": None, "wait_for": [], "serves": True}
                     for host in waiting]
        line = "swarm: %s send to %s at once, each passing on the pieces it has checked" % (
            ", ".join(senders), ", ".join(waiting))
        return {"transfers": transfers, "seeds": holders, "rounds": 1, "lines": [line], "pipelined": True}
    if not fanout:
        seeder = source
        transfers = [{"host": host, "seeder": seeder, "round": 1, "after": None} for host in waiting]
    else:
        number = 0
        if not holders:
            first = waiting.pop(0)
            number = 1
            transfers.append({"host": first, "seeder": None, "round": 1, "after": None})
            holders = [first]
        while waiting:
            number += 1
            fed = []
            for seeder in list(holders):
                if not waiting:
                    break
                host = waiting.pop(0)
                transfers.append({"host": host, "seeder": seeder, "round": number, "after": previous.get(seeder)})
                previous[seeder] = host
                fed.append(host)
            holders.extend(fed)
    seeders = set(t["seeder"] for t in transfers if t["seeder"] is not None)
    received = set(t["host"] for t in transfers)
    for transfer in transfers:
        transfer["serves"] = transfer["host"] in seeders
        transfer["wait_for"] = [host for host in (transfer["seeder"], transfer["after"]) if host in received]
    rounds = max(t["round"] for t in transfers)
    lines = []
    for number in range(1, rounds + 1):
        pairs = ["%s -> %s" % (t["seeder"] or "the controller", t["host"]) for t in transfers if t["round"] == number]
        lines.append("round %d: %s" % (number, ", ".join(pairs)))
    return {"transfers": transfers, "seeds": [host for host in order if host in seeders and host not in received],
            "rounds": rounds, "lines": lines, "pipelined": False}


def copy_options(bwlimit=None, io_timeout=600):
    """The rsync options of every copy; ``bwlimit`` is rsync's --bwlimit value (e.g. 100M), ``io_timeout``
    the seconds without data after which rsync gives up."""
    return COPY_OPTIONS + ["--timeout=%d" % io_timeout] + (["--bwlimit=%s" % bwlimit] if bwlimit else [])


def fetch_argv(seeder_ip, port, dest, password_file, bwlimit=None, io_timeout=600):
    """A node's rsync that fetches the model from another node's daemon (seed_config())."""
    return ["rsync"] + copy_options(bwlimit, io_timeout) + [
        "--contimeout=30", "--password-file=" + password_file,
        "rsync://%s@%s:%d/%s/" % (RSYNC_USER, seeder_ip, port, RSYNC_MODULE), dest.rstrip("/") + "/"]


def push_argv(src, target, rsh=None, rsync_path=None, bwlimit=None, io_timeout=600):
    """The controller's rsync that sends the model in ``src`` to ``target`` (``host:path``, or a local path
    when ``rsh`` is None); ``rsh`` is the remote shell command (rsh_option()), ``rsync_path`` the remote
    rsync command (e.g. "sudo -n rsync")."""
    argv = ["rsync"] + copy_options(bwlimit, io_timeout)
    if rsh:
        argv.append("--rsh=" + rsh)
    if rsync_path:
        argv.append("--rsync-path=" + rsync_path)
    return argv + [src.rstrip("/") + "/", target.rstrip("/") + "/"]


def rsh_option(argv):
    """rsync's -e/--rsh value for a remote shell argv. rsync splits it on spaces and honours single and
    double quotes, but not backslashes; an argument holding both kinds of quote cannot be passed."""
    words = []
    for arg in argv:
        if arg and not re.search(r"[\s'\"]", arg):
            words.append(arg)
        elif "'" not in arg:
            words.append("'%s'" % arg)
        elif '"' not in arg:
            words.append('"%s"' % arg)
        else:
            raise ValueError("the remote shell argument %r holds both kinds of quote, which rsync cannot pass" % arg)
    return " ".join(words)


def seed_config(path, allow, secrets_file, io_timeout=600):
    """The rsync daemon configuration that serves the model at ``path``, read-only, to the addresses in
    ``allow`` (the cluster's members) with the user and password of secrets_file; its partial directories
    are not served."""
    for value in [path, secrets_file] + list(allow):
        if not value or re.search(r"[\x00-\x1f\x7f]", value):
            raise ValueError("a line break or control character cannot be written to rsyncd.conf: %r" % value)
    return "\n".join([
        "# A copy of the model (ascend.inference, model role); removed when the copy ends.",
        "[%s]" % RSYNC_MODULE,
        "    path = %s" % path,
        "    read only = yes",
        "    list = no",
        # Links in the model (a Hugging Face snapshot's, say) are followed for --copy-links; paths the
        # client sends are still confined to the module. Read as nobody, so that a link cannot reach
        # what only root may read: the model must be readable by every account (the copies are, 0644).
        "    use chroot = no",
        "    munge symlinks = no",
        "    uid = 65534",
        "    gid = 65534",
        "    hosts allow = %s" % " ".join(allow),
        "    hosts deny = *",
        "    auth users = %s:ro" % RSYNC_USER,
        "    secrets file = %s" % secrets_file,
        "    strict modes = yes",
        "    timeout = %d" % io_timeout,
        "    exclude = %s/" % PARTIAL_DIR,
        "",
    ])


_STATS = {
    "literal": re.compile(r"^Literal data: ([\d,]+) bytes", re.M),
    "matched": re.compile(r"^Matched data: ([\d,]+) bytes", re.M),
    "files_transferred": re.compile(r"^Number of regular files transferred: ([\d,]+)", re.M),
}


def rsync_stats(output):
    """{literal, matched, files_transferred} from rsync's --stats text (literal: bytes sent as data;
    matched: bytes the receiver already had, e.g. an interrupted file resumed); missing ones are None."""
    found = {}
    for key, pattern in _STATS.items():
        match = pattern.search(output or "")
        found[key] = int(match.group(1).replace(",", "")) if match else None
    return found


def size_text(size):
    """1234567 -> '1.2 MB' (decimal units, as rsync and disks count)."""
    size = float(size)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return ("%d %s" % (size, unit)) if unit == "B" else ("%.1f %s" % (size, unit))
        size /= 1000.0


def progress_status(seeder, done, total, rate):
    """'from node1: 120.0 MB of 300.0 MB (40%), 25.0 MB/s' (seeder None: the controller)."""
    percent = int(100 * done / total) if total else 100
    return "from %s: %s of %s (%d%%), %s/s" % (seeder or "the controller", size_text(done), size_text(total),
                                               percent, size_text(rate))


def mismatch(result):
    """What a node's files lack against the manifest, in one phrase ("2 missing (a, b); 1 not in the
    manifest (x)"), or None when they match; result: compare()'s, with model_check's corrupt list."""
    parts = []
    if result.get("missing"):
        parts.append("%d missing (%s)" % (len(result["missing"]), _few(result["missing"])))
    if result.get("wrong_size"):
        parts.append("%d of another size (%s)" % (len(result["wrong_size"]), _few(
            ["%s: %d bytes, manifest %d" % (w["path"], w["size"], w["expected"]) for w in result["wrong_size"]])))
    if result.get("corrupt"):
        parts.append("%d whose sha256 differs from the manifest (%s)" % (len(result["corrupt"]), _few(result["corrupt"])))
    if result.get("extra"):
        parts.append("%d not in the manifest (%s)" % (len(result["extra"]), _few(result["extra"])))
    return "; ".join(parts) or None


def check_summary(host, path, result):
    """One sentence of what a node's check found wrong, or None when its files match the manifest."""
    found = mismatch(result)
    return "%s: %s: %s" % (host, path, found) if found else None


def _few(items, limit=5):
    shown = ", ".join(items[:limit])
    return shown + (", and %d more" % (len(items) - limit) if len(items) > limit else "")


SOURCES = ("none", "controller", "head", "shared", "huggingface", "modelscope")
HUBS = ("huggingface", "modelscope")


def settings_problems(source, model, src=None, hub_repo=None, head=None, hosts=()):
    """What is wrong with the model role's variables, each naming the variable."""
    if source not in SOURCES:
        return ["model_source must be one of %s (found %r)" % (", ".join(SOURCES), source)]
    if source == "none":
        return []
    problems = []
    if not isinstance(model, str) or not model.startswith("/") or model.rstrip("/") == "":
        problems.append("ascend_model must be an absolute directory path below / when model_source is %s "
                        "(found %r): the model role puts the model there on every node" % (source, model))
    if source == "controller" and not src:
        problems.append("model_source controller needs model_src, the model's directory on the controller")
    if source in HUBS and not hub_repo:
        problems.append("model_source %s needs model_hub_repo, the model's repository (e.g. Qwen/Qwen2.5-7B-Instruct)"
                        % source)
    if source != "controller" and head not in hosts:
        problems.append("model_source %s: the head %s holds the model's source but is not in this run "
                        "(--limit); include it" % (source, head))
    return problems


def node_problems(source, results):
    """What stops a copy, per node, from each node's model_check result ({host: result}): files the manifest
    does not hold (left in place), too little space, and, from a shared mount, a node that does not see it."""
    problems = []
    for host in sorted(results):
        result = results[host]
        if result.get("extra"):
            problems.append("%s: %d file(s) under the model directory are not in the model's manifest (%s): "
                            "remove them, or set model_remove_extra: true" % (
                                host, len(result["extra"]), _few(result["extra"])))
        if source == "shared" and not result.get("complete"):
            problems.append("%s does not see the model on the shared mount as the head does: %s" % (
                host, mismatch(result)))
        elif result.get("bytes_missing", 0) > result.get("free_bytes", 0):
            problems.append("%s: the copy needs %s more, but only %s is free there" % (
                host, size_text(result["bytes_missing"]), size_text(result["free_bytes"])))
    return problems


def hub_download_argv(source, program, repo, revision, dest):
    """The hub's own command that downloads ``repo`` (at ``revision``, if given) into ``dest``: the
    huggingface_hub CLI (``hf`` or the older ``huggingface-cli``) or ModelScope's."""
    if source == "huggingface":
        argv = [program, "download", repo, "--local-dir", dest]
        return argv + (["--revision", revision] if revision else [])
    argv = [program, "download", "--model", repo, "--local_dir", dest]
    return argv + (["--revision", revision] if revision else [])
