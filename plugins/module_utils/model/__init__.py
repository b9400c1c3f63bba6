# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model on every node: its manifest and the checks against it, who copies from whom in rounds (rsync), and the
pipelined copy over BitTorrent (the torrent, the tracker's reply, aria2's configuration and status).

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
