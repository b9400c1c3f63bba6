# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pipelined copy's decisions (model role, model_pipeline): aria2's configuration on a node and on the
controller, what a node's aria2 reports (its JSON-RPC, read-only), and when a holder counts as stalled. Pure;
the modules and the action plugin run them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

TORRENT = "model.torrent"
ARIA2_CONF = "aria2.conf"
TRACKER_DIR = "tracker"
# The tracker's reply is a file; the torrent's announce URL names it.
ANNOUNCE = "announce"
# How often the peers ask the tracker again: the list never changes, a peer that restarts asks at once.
TRACKER_INTERVAL = 60
# The controller's link carries every piece once at least and is the copy's bottleneck: it serves this many
# nodes, which pass the pieces on. With every node connected to it, several asked it for the same pieces (8 nodes:
# 13% of its blocks sent twice, bench/FANOUT.md). Two, not one: a stopped node keeps its slot.
CONTROLLER_PEERS = 2
# The tracker on the controller (a copy from the controller): python's http.server serving the one reply from
# DIRECTORY on ADDRESS:PORT until the process WATCHED (ansible-playbook) ends, as the controller's aria2 does
# (stop-with-process); the copy's cleanup kills it before. argv: ADDRESS PORT DIRECTORY WATCHED.
CONTROLLER_TRACKER = """
import functools, http.server, os, socket, sys, threading, time
address, port, directory, watched = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
threading.Thread(target=Server((address, port), handler).serve_forever, daemon=True).start()
while True:
    try:
        os.kill(watched, 0)
    except OSError:
        break
    time.sleep(1)
"""
# From this many receiving nodes on, model_pipeline: auto pipelines (below, the rounds are as fast).
AUTO_FROM = 3
STATUS_KEYS = ["gid", "status", "totalLength", "completedLength", "verifiedLength", "verifyIntegrityPending",
               "downloadSpeed", "uploadSpeed", "connections", "seeder", "errorCode", "errorMessage"]


def pipelined(mode, receivers):
    """Whether the copy runs as a swarm: model_pipeline and the count of nodes that receive."""
    if mode == "always":
        return receivers > 0
    if mode == "never":
        return False
    return receivers >= AUTO_FROM


def members(controller, holders, addresses):
    """The tracker's list: the controller, the nodes that hold the model, then every node, each once. aria2 tries
    them in that order, a few at a time: a node that reached only receivers first waited seconds for its first
    piece."""
    found = []
    for address in [controller] + list(holders) + list(addresses):
        if address and address not in found:
            found.append(address)
    return found


def announce_url(address, port):
    host = "[%s]" % address if ":" in address else address
    return "http://%s:%d/%s" % (host, port, ANNOUNCE)


def aria2_conf(directory, address, port, control_port, secret, lifetime, peers, holder=False, bwlimit="",
               stop_with=None, check=True):
    """aria2c's configuration file (0600: it holds the RPC secret). A holder seeds what it has without reading it
    again (its copy passed the model's check); a receiver checks what it holds piece by piece first, then
    fetches only the missing or bad pieces (``check``: false where it holds nothing, see held_anything()).
    Everyone seeds until the copy's cleanup stops it."""
    lines = {
        "dir": directory,
        "listen-port": port,
        "interface": address,
        "disable-ipv6": "false" if ":" in address else "true",
        # The members are the tracker's list: no DHT, no local discovery, no peer exchange (private torrent).
        "enable-dht": "false",
        "enable-dht6": "false",
        "bt-enable-lpd": "false",
        "enable-peer-exchange": "false",
        "bt-max-peers": max(peers, 1),
        "seed-ratio": "0.0",
        "bt-seed-unverified": "true" if holder else "false",
        "check-integrity": "true" if check and not holder else "false",
        # Files that are there are checked, never renamed or replaced whole.
        "allow-overwrite": "true",
        "auto-file-renaming": "false",
        "file-allocation": "none",
        "bt-save-metadata": "false",
        "enable-rpc": "true",
        "rpc-listen-all": "false",
        "rpc-listen-port": control_port,
        "rpc-secret": secret,
        "console-log-level": "notice",
        "summary-interval": 0,
        "stop": lifetime,
    }
    if bwlimit:
        lines["max-overall-upload-limit"] = bwlimit
    if stop_with:
        lines["stop-with-process"] = stop_with
        # The controller: the nodes learn its address from the tracker's list; it announces nowhere.
        lines["bt-exclude-tracker"] = "*"
    return "".join("%s=%s\n" % (key, value) for key, value in lines.items())


def held_anything(found):
    """Whether a receiver holds any byte under the model directory (``found``: model/files.walk()), which aria2
    must check piece by piece before it fetches. Where it holds nothing, aria2 skips that check: a check, even of
    nothing, puts its first request to the tracker off by one of its one-second rounds, and the connections to
    the holders by another (8 nodes: the first piece 3.1 s after aria2 started against 1.2 s, bench/FANOUT.md).
    Every piece is still checked against its SHA-1 as it arrives."""
    return any(size for size, _mtime in found.values())


def fetch_seconds(found, started):
    """How long a node's fetch took: from its aria2's start (``started``, seconds since the epoch) to the last
    byte written under the model directory (``found``: model/files.walk(), mtimes in ns); 0 where it fetched
    nothing. Right also when the look that saw the end came late: with Ansible's forks fewer than the nodes, a
    node's wait may begin after its aria2 finished. None when either is unknown."""
    if started is None or not found:
        return None
    newest = max(mtime for _size, mtime in found.values()) / 1e9
    return round(max(newest - started, 0.0), 1)


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def node_status(download, peers, addresses):
    """One node's view of the swarm from aria2's tellStatus (``download``) and getPeers (``peers``);
    ``addresses``: inventory name by address, for the holders' names."""
    total = _int(download.get("totalLength"))
    completed = _int(download.get("completedLength"))
    # aria2 gives verifiedLength only while it checks what the node held.
    checking = download.get("verifyIntegrityPending") == "true" or "verifiedLength" in download
    holders = [{"name": addresses.get(p.get("ip"), p.get("ip")), "bitfield": p.get("bitfield", ""),
                "seeder": p.get("seeder") == "true", "choking": p.get("peerChoking") == "true",
                "rate": _int(p.get("downloadSpeed"))} for p in peers]
    return {
        "state": download.get("status", "unknown"),
        "total": total,
        "completed": completed,
        "complete": total > 0 and completed == total,
        "checking": checking,
        "download_rate": _int(download.get("downloadSpeed")),
        "upload_rate": _int(download.get("uploadSpeed")),
        "peers": sorted(h["name"] for h in holders),
        "sending": sorted(h["name"] for h in holders if h["rate"] > 0),
        "holders": sorted(holders, key=lambda h: h["name"]),
        "error": download.get("errorMessage") if download.get("status") == "error" else None,
    }


def served(status):
    """Whether the node holds the model and no peer connected to it lacks pieces. aria2 drops the connection
    between two seeders (DefaultBtInteractive::checkActiveInteraction): a node that holds the model stays
    connected only to the peers that still need pieces."""
    return status["complete"] and all(holder["seeder"] for holder in status.get("holders", []))


class Watch(object):
    """A node's copy over time. ``stalled``: no new bytes for ``timeout`` seconds. ``frozen``: its own aria2 did
    not answer for that long (a stopped process). ``stalled_holders``: holders that sent to this node and then
    stopped: one that was receiving itself whose pieces have not changed for ``timeout`` (it sends no HAVE), or
    one that holds everything, does not choke the node and has sent nothing for ``timeout`` while the node lacks
    pieces. aria2 takes their pieces from the other holders meanwhile; this names them."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.best = -1
        self.progress_at = None
        self.answered_at = None
        self.sent_at = {}
        self.changed_at = {}
        self.bitfields = {}
        self.last = None

    def seen(self, now, status):
        """A status read at ``now`` (None: aria2 did not answer)."""
        if self.progress_at is None:
            self.progress_at = now
            self.answered_at = now
        if status is None:
            return
        self.answered_at = now
        self.last = status
        if status["completed"] > self.best or status["checking"]:
            self.best = max(self.best, status["completed"])
            self.progress_at = now
        for holder in status["holders"]:
            name = holder["name"]
            # A long look (Watch.look on the node) tells how long ago a holder's pieces changed or it last sent.
            if self.bitfields.get(name) != holder["bitfield"]:
                self.bitfields[name] = holder["bitfield"]
                self.changed_at[name] = now - (holder.get("changed_ago") or 0)
            if holder["rate"] > 0:
                self.sent_at[name] = now
            elif holder.get("sent_ago") is not None:
                self.sent_at[name] = max(self.sent_at.get(name, 0), now - holder["sent_ago"])

    def look(self, now):
        """The status seen last, each holder with ``changed_ago`` and ``sent_ago``: seconds since its pieces last
        changed and since it last sent (None: never), as this watch saw them. On the node, one watch over a look of
        several seconds tells the controller's watch when a holder went quiet, so that looks can last long (each
        is a module run) and holders are still named on time."""
        status = dict(self.last)
        status["holders"] = [dict(holder, changed_ago=round(now - self.changed_at.get(holder["name"], now), 1),
                                  sent_ago=None if holder["name"] not in self.sent_at
                                  else round(now - self.sent_at[holder["name"]], 1))
                             for holder in status.get("holders", [])]
        return status

    def frozen(self, now, seconds=None):
        return self.answered_at is not None and now - self.answered_at >= (seconds or self.timeout)

    def stalled(self, now, seconds=None):
        return self.progress_at is not None and now - self.progress_at >= (seconds or self.timeout)

    def next_look(self, now, longest):
        """How long the next look may last (1 to ``longest`` seconds, never more than the stall timeout, so that a
        node that receives nothing is judged on time): until the first moment a holder that sent could count as
        stalled, so that it is named on time however long the looks are."""
        due = [min(longest, self.timeout)]
        status = self.last
        for holder in (status or {}).get("holders", []):
            name = holder["name"]
            if name not in self.sent_at or (holder["seeder"] and holder["choking"]):
                continue
            since = self.sent_at[name] if holder["seeder"] else self.changed_at.get(name, now)
            left = since + self.timeout - now
            # One already past its time was named or is not to be: it does not shorten every look after.
            if left > 0:
                due.append(left)
        return max(1, min(due))

    def stalled_holders(self, now):
        """From the status seen last, which must be the one read at ``now``."""
        status = self.last
        if status is None or status["complete"] or status["checking"]:
            return []
        found = []
        for holder in status["holders"]:
            name = holder["name"]
            if name not in self.sent_at:
                continue
            # aria2's rates are averages that take about 10 s to fall to 0 after a peer stops: a receiving holder
            # is judged by its pieces, which stop changing at once.
            if holder["seeder"]:
                if not holder["choking"] and now - self.sent_at[name] >= self.timeout:
                    found.append(name)
            elif now - self.changed_at.get(name, now) >= self.timeout:
                found.append(name)
        return sorted(found)
