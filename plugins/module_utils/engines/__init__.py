# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engines: which engines and releases the collection knows, which vLLM each release runs on, what that vLLM's
serve accepts (the generated option tables), its metrics and API paths. releases.py is the one table; adding a
release starts there (docs/development/architecture.md has the checklist).

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
