# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pipelined copy's decisions. aria2's answers follow its JSON-RPC as documented for aria2 1.36
(aria2.tellStatus: strings for numbers, verifiedLength only while it checks; aria2.getPeers: ip, bitfield,
peerChoking, downloadSpeed, seeder); tests/sim/test_swarm.py reads the real aria2."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.model import swarm

NAMES = {"192.0.2.11": "node1", "192.0.2.12": "node2", "192.0.2.1": "the controller"}


def peer(ip, bitfield="ff", rate="0", seeder="false", choking="false"):
    return {"ip": ip, "port": "8730", "bitfield": bitfield, "downloadSpeed": rate, "uploadSpeed": "0",
            "seeder": seeder, "peerChoking": choking, "amChoking": "true"}


def download(completed, total=1000, **extra):
    found = {"gid": "2089b05ecca3d829", "status": "active", "totalLength": str(total),
             "completedLength": str(completed), "downloadSpeed": "100", "uploadSpeed": "50", "connections": "2"}
    found.update(extra)
    return found


def test_pipelined_from_three_receivers_unless_told():
    assert [swarm.pipelined("auto", n) for n in (0, 1, 2, 3, 16)] == [False, False, False, True, True]
    assert swarm.pipelined("always", 1) and not swarm.pipelined("always", 0)
    assert not swarm.pipelined("never", 16)


def test_announce_url_brackets_ipv6():
    assert swarm.announce_url("192.0.2.11", 8731) == "http://192.0.2.11:8731/announce"
    assert swarm.announce_url("2001:db8::1", 8731) == "http://[2001:db8::1]:8731/announce"


def test_aria2_conf_for_a_receiver_and_a_holder():
    receiver = dict(line.split("=", 1) for line in swarm.aria2_conf(
        "/models", "192.0.2.12", 8730, 8732, "pw", 86400, 4).splitlines())
    assert receiver["check-integrity"] == "true" and receiver["bt-seed-unverified"] == "false"
    assert receiver["interface"] == "192.0.2.12" and receiver["listen-port"] == "8730"
    assert receiver["rpc-listen-all"] == "false" and receiver["rpc-listen-port"] == "8732"
    assert receiver["rpc-secret"] == "pw" and receiver["seed-ratio"] == "0.0" and receiver["stop"] == "86400"
    assert receiver["enable-dht"] == receiver["bt-enable-lpd"] == receiver["enable-peer-exchange"] == "false"
    assert receiver["auto-file-renaming"] == "false" and receiver["disable-ipv6"] == "true"
    assert "max-overall-upload-limit" not in receiver and "stop-with-process" not in receiver
    holder = dict(line.split("=", 1) for line in swarm.aria2_conf(
        "/x", "2001:db8::1", 8730, 8732, "pw", 60, 4, holder=True, bwlimit="500M", stop_with=4242).splitlines())
    assert holder["check-integrity"] == "false" and holder["bt-seed-unverified"] == "true"
    assert holder["max-overall-upload-limit"] == "500M" and holder["stop-with-process"] == "4242"
    assert holder["bt-exclude-tracker"] == "*" and "bt-exclude-tracker" not in receiver
    assert holder["disable-ipv6"] == "false"
    fresh = dict(line.split("=", 1) for line in swarm.aria2_conf(
        "/models", "192.0.2.12", 8730, 8732, "pw", 86400, 4, check=False).splitlines())
    assert fresh["check-integrity"] == "false" and fresh["bt-seed-unverified"] == "false"


def test_a_receiver_is_checked_where_it_holds_any_byte():
    # model_files.walk(): {path: (size, mtime_ns)}
    assert not swarm.held_anything({})
    assert not swarm.held_anything({"config.json": (0, 1), "model-00001.safetensors": (0, 1)})
    assert swarm.held_anything({"config.json": (0, 1), "model-00001.safetensors": (1, 1)})


def test_node_status_names_the_senders():
    peers = [peer("192.0.2.11", rate="2048"), peer("192.0.2.1", seeder="true"), peer("198.51.100.7")]
    found = swarm.node_status(download(400), peers, NAMES)
    assert found["completed"] == 400 and not found["complete"] and not found["checking"]
    assert found["sending"] == ["node1"] and found["peers"] == ["198.51.100.7", "node1", "the controller"]
    assert swarm.node_status(download(1000), [], NAMES)["complete"]
    # While aria2 checks what the node held it reports verifiedLength.
    assert swarm.node_status(download(0, verifiedLength="1048576"), [], NAMES)["checking"]
    failed = swarm.node_status(download(10, status="error", errorMessage="disk full"), [], NAMES)
    assert failed["error"] == "disk full"


def test_a_node_is_served_once_it_holds_the_model_and_no_peer_lacks_pieces():
    # aria2 drops the connection between two seeders (DefaultBtInteractive::checkActiveInteraction, aria2 1.36):
    # a node that holds the model stays connected to the peers that lack pieces only.
    lacking = [peer("192.0.2.11", bitfield="f0"), peer("192.0.2.1", seeder="true")]
    assert not swarm.served(swarm.node_status(download(1000), lacking, NAMES))
    assert not swarm.served(swarm.node_status(download(900), [], NAMES))
    assert swarm.served(swarm.node_status(download(1000), lacking[1:], NAMES))
    assert swarm.served(swarm.node_status(download(1000), [], NAMES))


def test_watch_names_a_receiver_that_stopped_sending():
    watch = swarm.Watch(30)
    watch.seen(0, swarm.node_status(download(100), [peer("192.0.2.11", bitfield="f0", rate="500")], NAMES))
    # node1 stops: its pieces no longer change, it sends nothing; the controller still sends.
    for now in (10, 20, 29):
        peers = [peer("192.0.2.11", bitfield="f8"), peer("192.0.2.1", seeder="true", rate="9")]
        watch.seen(now, swarm.node_status(download(100 + now), peers, NAMES))
    assert watch.stalled_holders(29) == []
    watch.seen(39, swarm.node_status(download(200), [peer("192.0.2.11", bitfield="f8"),
                                                     peer("192.0.2.1", seeder="true", rate="9")], NAMES))
    assert watch.stalled_holders(39) == []  # its pieces changed at 10: 29 s ago
    watch.seen(41, swarm.node_status(download(210), [peer("192.0.2.11", bitfield="f8"),
                                                     peer("192.0.2.1", seeder="true", rate="9")], NAMES))
    assert watch.stalled_holders(41) == ["node1"]
    assert not watch.stalled(41) and not watch.frozen(41)


def test_watch_does_not_name_a_receiver_that_still_receives_or_one_that_never_sent():
    watch = swarm.Watch(30)
    watch.seen(0, swarm.node_status(download(100), [peer("192.0.2.11", bitfield="00", rate="5"),
                                                    peer("192.0.2.12", bitfield="00")], NAMES))
    for now, bits in ((20, "0f"), (40, "ff"), (60, "ff0")):
        peers = [peer("192.0.2.11", bitfield=bits), peer("192.0.2.12", bitfield="00")]
        watch.seen(now, swarm.node_status(download(100 + now), peers, NAMES))
    assert watch.stalled_holders(60) == []


def test_watch_names_a_silent_holder_that_does_not_choke_the_node():
    watch = swarm.Watch(30)
    watch.seen(0, swarm.node_status(download(100), [peer("192.0.2.1", seeder="true", rate="80"),
                                                    peer("192.0.2.11", seeder="true", rate="80")], NAMES))
    watch.seen(31, swarm.node_status(download(900), [peer("192.0.2.1", seeder="true"),
                                                     peer("192.0.2.11", seeder="true", choking="true", rate="0")],
                                     NAMES))
    # The controller unchokes the node and sends nothing: stalled. node1 chokes it: busy with others, not stalled.
    assert watch.stalled_holders(31) == ["the controller"]
    # Nothing is named once the node holds everything, or while it checks.
    watch.seen(32, swarm.node_status(download(1000), [peer("192.0.2.1", seeder="true")], NAMES))
    assert watch.stalled_holders(32) == []


def test_watch_frozen_and_stalled():
    watch = swarm.Watch(30)
    watch.seen(0, swarm.node_status(download(100), [], NAMES))
    watch.seen(20, None)
    assert not watch.frozen(20)
    watch.seen(31, None)
    assert watch.frozen(31) and watch.stalled(31) and not watch.stalled(31, 600)
    # A check of what the node held counts as progress.
    watch = swarm.Watch(30)
    for now in range(0, 100, 10):
        watch.seen(now, swarm.node_status(download(0, verifiedLength=str(now)), [], NAMES))
    assert not watch.stalled(95)


def test_watch_names_a_frozen_receiver_while_its_averaged_rate_still_falls():
    # A frozen aria2's rate, as its peers' aria2 averages it, takes about 10 s to reach 0 (seen with aria2 1.36
    # on loopback); its pieces stop changing at once.
    watch = swarm.Watch(8)
    watch.seen(0, swarm.node_status(download(100), [peer("192.0.2.11", bitfield="f0", rate="900")], NAMES))
    for now, rate in ((3, "400"), (6, "250"), (8, "100")):
        peers = [peer("192.0.2.11", bitfield="f0", rate=rate), peer("192.0.2.1", seeder="true", rate="9")]
        watch.seen(now, swarm.node_status(download(100 + now), peers, NAMES))
    assert watch.stalled_holders(6) == [] and watch.stalled_holders(8) == ["node1"]


def test_a_long_look_tells_when_a_holder_went_quiet():
    # One module run samples for 10 s on the node; node1's pieces change last at 3 s, the controller sends until 4 s.
    on_node = swarm.Watch(0)
    for now, bits, rate in ((0, "f0", "5"), (1, "f8", "5"), (3, "fc", "5"), (4, "fc", "5"), (10, "fc", "0")):
        on_node.seen(now, swarm.node_status(download(100 + now), [peer("192.0.2.11", bitfield=bits),
                                                                  peer("192.0.2.1", seeder="true", rate=rate)], NAMES))
    found = dict((h["name"], h) for h in on_node.look(10)["holders"])
    assert (found["node1"]["changed_ago"], found["the controller"]["sent_ago"]) == (7, 6)
    assert found["node1"]["sent_ago"] is None and on_node.look(10)["completed"] == 110
    # The watch that sees the look at 10 s knows node1 has been quiet since 3 s: named at 33 s, not 40 s.
    watch = swarm.Watch(30)
    watch.seen(0, swarm.node_status(download(100), [peer("192.0.2.11", bitfield="f0", rate="5")], NAMES))
    watch.seen(10, on_node.look(10))
    assert watch.changed_at["node1"] == 3 and watch.sent_at["the controller"] == 4
    # So the next look lasts until node1's time is up (23 s), however long looks may be.
    assert watch.next_look(10, 60) == 23
    quiet = swarm.node_status(download(300), [peer("192.0.2.11", bitfield="fc"),
                                              peer("192.0.2.1", seeder="true", rate="5")], NAMES)
    watch.seen(32, quiet)
    assert watch.stalled_holders(32) == []
    watch.seen(33, quiet)
    assert watch.stalled_holders(33) == ["node1"]


def test_next_look_is_long_when_nobody_is_due():
    watch = swarm.Watch(30)
    assert watch.next_look(0, 10) == 10
    # A holder that chokes the node, one past its time (named already), one that never sent: none shortens it.
    watch.seen(0, swarm.node_status(download(100), [peer("192.0.2.11", bitfield="f0", rate="5"),
                                                    peer("192.0.2.1", seeder="true", rate="5")], NAMES))
    watch.seen(40, swarm.node_status(download(900), [peer("192.0.2.11", bitfield="f0"),
                                                     peer("192.0.2.1", seeder="true", choking="true"),
                                                     peer("192.0.2.12", bitfield="00")], NAMES))
    assert watch.next_look(40, 10) == 10
    # Never below a second.
    watch.seen(41, swarm.node_status(download(950), [peer("192.0.2.11", bitfield="f8", rate="5")], NAMES))
    assert watch.next_look(70.5, 10) == 1


def test_a_look_never_outlasts_the_stall_timeout():
    # model_progress_every may be longer: the controller still judges a node that receives nothing, or whose
    # aria2 froze, once per stall timeout.
    assert swarm.Watch(30).next_look(0, 600) == 30
    assert swarm.Watch(30).next_look(0, 20) == 20


def test_the_trackers_list_names_the_holders_first_and_each_member_once():
    assert swarm.members("192.0.2.1", ["192.0.2.12"], ["192.0.2.11", "192.0.2.12", "192.0.2.13"]) == [
        "192.0.2.1", "192.0.2.12", "192.0.2.11", "192.0.2.13"]
    assert swarm.members(None, [], ["192.0.2.11", "192.0.2.11"]) == ["192.0.2.11"]


def test_the_fetch_lasts_from_aria2s_start_to_the_last_byte_written():
    started = 1765000000.0
    # model_files.walk(): {path: (size, mtime_ns)}; the newest write counts, not the look that saw it later.
    found = {"a.safetensors": (10, int((started + 12.34) * 1e9)), "b.json": (2, int((started + 3) * 1e9))}
    assert swarm.fetch_seconds(found, started) == 12.3
    # Nothing fetched (every file older than aria2): 0, never negative.
    assert swarm.fetch_seconds({"a.safetensors": (10, int((started - 60) * 1e9))}, started) == 0.0
    assert swarm.fetch_seconds(found, None) is None and swarm.fetch_seconds({}, started) is None
