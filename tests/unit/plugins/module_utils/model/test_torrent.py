# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torrent and the tracker reply, against BEP 3 (metainfo, bencoding), BEP 23 (compact peers) and BEP 27
(private). aria2 reads them in tests/sim/test_swarm.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.model import torrent


def test_bencode_follows_bep3():
    # BEP 3's own examples, and keys sorted as raw strings.
    assert torrent.bencode(b"spam") == b"4:spam"
    assert torrent.bencode(3) == b"i3e"
    assert torrent.bencode(-3) == b"i-3e"
    assert torrent.bencode([b"spam", b"eggs"]) == b"l4:spam4:eggse"
    assert torrent.bencode({"spam": [b"a", b"b"], "cow": b"moo"}) == b"d3:cow3:moo4:spaml1:a1:bee"
    with pytest.raises(TypeError):
        torrent.bencode(True)


def test_bdecode_round_trip():
    value = {b"a": [1, b"x", {b"b": b""}], b"n": -7}
    assert torrent.bdecode(torrent.bencode(value)) == value
    with pytest.raises(ValueError):
        torrent.bdecode(b"i1ei2e")
    with pytest.raises(ValueError):
        torrent.bdecode(b"5:abc")


def test_piece_length_is_a_power_of_two_within_bounds():
    assert torrent.piece_length(400 * torrent.MIB) == torrent.MIB // 4
    assert torrent.piece_length(2048 * torrent.MIB) == torrent.MIB // 4
    assert torrent.piece_length(2048 * torrent.MIB + 1) == torrent.MIB // 2
    assert torrent.piece_length(8 * 1024 * torrent.MIB) == torrent.MIB
    assert torrent.piece_length(700 * 1024 * torrent.MIB) == 16 * torrent.MIB


def test_pieces_span_files_in_manifest_order(tmp_path):
    (tmp_path / "sub").mkdir()
    contents = {"b.bin": b"B" * 5, "a.json": b"", "sub/c": bytes(range(256)) * 3}
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    order = [("sub/c", 768), ("a.json", 0), ("b.bin", 5)]
    joined = contents["sub/c"] + contents["b.bin"]
    meta = torrent.build(str(tmp_path), order, "model", "http://192.0.2.1:8731/announce", "n0nce", length=256)
    decoded = torrent.bdecode(meta)
    info = decoded[b"info"]
    assert decoded[b"announce"] == b"http://192.0.2.1:8731/announce"
    assert info[b"private"] == 1 and info[b"name"] == b"model" and info[b"source"] == b"n0nce"
    assert info[b"files"] == [{b"length": 768, b"path": [b"sub", b"c"]}, {b"length": 0, b"path": [b"a.json"]},
                              {b"length": 5, b"path": [b"b.bin"]}]
    expected = b"".join(hashlib.sha1(joined[i:i + 256]).digest() for i in range(0, len(joined), 256))
    assert info[b"pieces"] == expected and len(expected) == 20 * 4
    assert torrent.info_hash(meta) == hashlib.sha1(torrent.bencode(info)).hexdigest()


def test_a_nonce_changes_the_info_hash(tmp_path):
    (tmp_path / "w").write_bytes(b"w" * 10)
    first = torrent.build(str(tmp_path), [("w", 10)], "m", "http://192.0.2.1/a", "one")
    second = torrent.build(str(tmp_path), [("w", 10)], "m", "http://192.0.2.1/a", "two")
    assert torrent.info_hash(first) != torrent.info_hash(second)


def test_a_short_file_is_an_error(tmp_path):
    (tmp_path / "w").write_bytes(b"w" * 3)
    with pytest.raises(IOError):
        torrent.build(str(tmp_path), [("w", 10)], "m", "http://192.0.2.1/a", "x")


def test_tracker_reply_is_compact():
    reply = torrent.bdecode(torrent.tracker_reply(["192.0.2.11", "10.0.0.2", "2001:db8::1"], 8731, interval=15))
    assert reply[b"interval"] == 15
    assert reply[b"peers"] == bytes([192, 0, 2, 11, 0x22, 0x1b, 10, 0, 0, 2, 0x22, 0x1b])
    assert reply[b"peers6"] == bytes.fromhex("20010db8000000000000000000000001") + b"\x22\x1b"


def test_the_pieces_are_read_once_per_manifest(tmp_path, monkeypatch):
    model, cache = tmp_path / "model", tmp_path / "cache" / "model.pieces"
    model.mkdir()
    (model / "a.bin").write_bytes(b"x" * 1000)
    manifest = {"digest": "d1", "files": [{"path": "a.bin", "size": 1000}]}
    first, hashed, length, count = torrent.for_manifest(str(model), manifest, "m", "http://t/announce", "n", str(cache))
    assert hashed and length == torrent.MIB // 4 and count == 1
    assert torrent.bdecode(first)[b"info"][b"pieces"] == hashlib.sha1(b"x" * 1000).digest()
    # Another run of the same manifest reads no file: the kept pieces make the same torrent.
    monkeypatch.setattr(torrent, "piece_hashes", lambda *a, **k: pytest.fail("the files were read again"))
    again, hashed, _length, _count = torrent.for_manifest(str(model), manifest, "m", "http://t/announce", "n",
                                                          str(cache))
    assert not hashed and again == first
    # A new manifest (the model changed) reads the files again.
    monkeypatch.undo()
    (model / "a.bin").write_bytes(b"y" * 1000)
    changed = dict(manifest, digest="d2")
    _meta, hashed, _length, _count = torrent.for_manifest(str(model), changed, "m", "http://t/announce", "n",
                                                          str(cache))
    assert hashed
    assert torrent.bdecode(_meta)[b"info"][b"pieces"] == hashlib.sha1(b"y" * 1000).digest()
