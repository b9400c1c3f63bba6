# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pipelined copy's metadata, in BitTorrent's own formats (BEP 3, BEP 23, BEP 27), for aria2: a private
torrent of the model's files (a SHA-1 per piece, which aria2 checks as each piece arrives) and the tracker's reply,
which is a fixed list because the plan knows every member."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import ipaddress
import json
import os
import struct
from concurrent.futures import ThreadPoolExecutor

MIB = 1 << 20
# Small pieces pass on sooner (a node forwards a piece once it holds and checked it): on bench/designs.py's
# 4 capped nodes 256 KiB pieces took 21.7-22.1 s, 1 MiB 23 s, 4 MiB 24.4 s. The torrent grows by 20 bytes a
# piece: at most about 8192 pieces, then larger pieces, up to 16 MiB (a 700 GB model: 44,800 pieces, 0.9 MB).
MIN_PIECE = MIB // 4
MAX_PIECE = 16 * MIB
TARGET_PIECES = 8192


def bencode(value):
    if isinstance(value, bool):
        raise TypeError("bencode has no booleans")
    if isinstance(value, int):
        return b"i%de" % value
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, bytes):
        return b"%d:%s" % (len(value), value)
    if isinstance(value, list):
        return b"l" + b"".join(bencode(item) for item in value) + b"e"
    if isinstance(value, dict):
        items = sorted((key.encode("utf-8") if isinstance(key, str) else key, item) for key, item in value.items())
        return b"d" + b"".join(bencode(key) + bencode(item) for key, item in items) + b"e"
    raise TypeError("cannot bencode %r" % type(value))


def bdecode(data):
    """The value bencoded in ``data`` (bytes); strings stay bytes."""
    value, end = _decode(data, 0)
    if end != len(data):
        raise ValueError("trailing data after the bencoded value")
    return value


def _decode(data, at):
    lead = data[at:at + 1]
    if lead == b"i":
        end = data.index(b"e", at)
        return int(data[at + 1:end]), end + 1
    if lead in (b"l", b"d"):
        items, at = [], at + 1
        while data[at:at + 1] != b"e":
            item, at = _decode(data, at)
            items.append(item)
        if lead == b"l":
            return items, at + 1
        return dict(zip(items[::2], items[1::2])), at + 1
    if lead.isdigit():
        colon = data.index(b":", at)
        start = colon + 1
        end = start + int(data[at:colon])
        if end > len(data):
            raise ValueError("a string runs past the end")
        return data[start:end], end
    raise ValueError("not bencoded at byte %d" % at)


def piece_length(total):
    """The smallest power of two from 256 KiB to 16 MiB that makes at most TARGET_PIECES pieces."""
    length = MIN_PIECE
    while length < MAX_PIECE and length * TARGET_PIECES < total:
        length *= 2
    return length


def piece_hashes(root, files, length, workers=None):
    """SHA-1 of every ``length`` bytes of the files' concatenation (the last piece shorter), in order.
    ``files``: (relative path, size) pairs."""
    spans, offset = [], 0
    for path, size in files:
        spans.append((offset, os.path.join(root, path), size))
        offset += size
    total = offset

    def one(index):
        start, end = index * length, min((index + 1) * length, total)
        digest = hashlib.sha1()
        for begin, path, size in spans:
            if begin + size <= start or begin >= end or size == 0:
                continue
            with open(path, "rb") as handle:
                handle.seek(max(start - begin, 0))
                want = min(end, begin + size) - max(start, begin)
                while want:
                    chunk = handle.read(min(want, 4 * MIB))
                    if not chunk:
                        raise IOError("%s is shorter than %d bytes" % (path, size))
                    digest.update(chunk)
                    want -= len(chunk)
        return digest.digest()

    count = (total + length - 1) // length
    with ThreadPoolExecutor(max_workers=workers or min(8, (os.cpu_count() or 1) + 1)) as pool:
        return b"".join(pool.map(one, range(count)))


def build(root, files, name, announce, nonce, length=None, pieces=None):
    """The bencoded private torrent of ``files`` ((relative path, size) pairs, in the manifest's order) under
    ``root``, whose top directory is ``name``. The nonce is part of the info dictionary: a peer must present the
    info hash to be served, and nobody outside the run can derive it."""
    files = list(files)
    total = sum(size for _path, size in files)
    length = length or piece_length(total)
    info = {
        "name": name,
        "piece length": length,
        "pieces": piece_hashes(root, files, length) if pieces is None else pieces,
        "files": [{"length": size, "path": path.split("/")} for path, size in files],
        "private": 1,
        "source": nonce,
    }
    return bencode({"announce": announce, "info": info})


def info_hash(meta):
    """The info hash (hex) of a bencoded torrent."""
    start = meta.index(b"4:infod") + len(b"4:info")
    _value, end = _decode(meta, start)
    return hashlib.sha1(meta[start:end]).hexdigest()


def tracker_reply(addresses, port, interval=30):
    """A tracker's reply listing ``addresses`` at ``port`` (BEP 23 compact form, IPv6 in peers6)."""
    peers, peers6 = b"", b""
    for address in addresses:
        parsed = ipaddress.ip_address(address)
        if parsed.version == 4:
            peers += parsed.packed + struct.pack(">H", port)
        else:
            peers6 += parsed.packed + struct.pack(">H", port)
    reply = {"interval": interval, "min interval": interval, "peers": peers}
    if peers6:
        reply["peers6"] = peers6
    return bencode(reply)


def _cached_pieces(path, digest, length):
    try:
        with open(path, "rb") as handle:
            header = json.loads(handle.readline().decode())
            pieces = handle.read()
    except (IOError, OSError, ValueError):
        return None
    if header.get("digest") != digest or header.get("piece_length") != length or len(pieces) % 20:
        return None
    return pieces


def _save_pieces(path, digest, length, pieces):
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    with open(path + ".tmp", "wb") as handle:
        handle.write(json.dumps({"digest": digest, "piece_length": length}).encode() + b"\n" + pieces)
    os.rename(path + ".tmp", path)


def for_manifest(root, manifest, name, announce, nonce, cache):
    """The torrent of the manifest's files under ``root``: the pieces' SHA-1 are read once per manifest digest
    and kept in ``cache``, so a later run reads no file. Returns (bencoded torrent, whether the files were read,
    piece length, piece count); raises IOError/OSError when a file cannot be read."""
    files = [(entry["path"], entry["size"]) for entry in manifest["files"]]
    length = piece_length(sum(size for _path, size in files))
    digest = manifest.get("digest")
    pieces = _cached_pieces(cache, digest, length) if digest else None
    hashed = pieces is None
    if hashed:
        pieces = piece_hashes(root, files, length)
        if digest:
            _save_pieces(cache, digest, length, pieces)
    return build(root, files, name, announce, nonce, length, pieces=pieces), hashed, length, len(pieces) // 20
