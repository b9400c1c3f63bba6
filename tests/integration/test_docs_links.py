"""tools/check_links.py: the README's and docs/' relative links lead to a file and, with #, to a heading."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "check_links.py")


def check(repo):
    return subprocess.run([sys.executable, TOOL, "--repo", str(repo)], capture_output=True, text=True, check=False)


def test_the_readme_and_every_page_link_to_what_exists():
    proc = check(REPO)
    assert proc.returncode == 0, proc.stderr


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


PAGE = """# The page

## What `plan.yml` shows

## Twice

## Twice

Text with [a link](#what-planyml-shows) and [the second](#twice-1).
"""


def test_good_links_pass(tmp_path):
    write(tmp_path, {
        "README.md": "[page](docs/page.md#twice) [dir](docs/) [site](https://example.invalid/x) [self](#top)\n\n# Top\n",
        "docs/page.md": PAGE,
        "docs/dev/deep.md": "[up](../page.md#what-planyml-shows) ![img](../page.md)\n",
    })
    proc = check(tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_every_broken_link_is_named_with_its_file_line_and_why(tmp_path):
    write(tmp_path, {
        "README.md": "# Top\n\n[gone](docs/gone.md)\n[anchor](docs/page.md#twice-2)\n[code anchor](docs/page.md#what-plan.yml-shows)\n",
        "docs/page.md": PAGE + "\n[out](../../etc/passwd) [tool](../tools/x.py#main)\n",
        "tools/x.py": "",
    })
    proc = check(tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "README.md:3: docs/gone.md: no such file",
        "README.md:4: docs/page.md#twice-2: no heading 'twice-2' in docs/page.md",
        "README.md:5: docs/page.md#what-plan.yml-shows: no heading 'what-plan.yml-shows' in docs/page.md",
        "docs/page.md:11: ../../etc/passwd: outside the repository",
        "docs/page.md:11: ../tools/x.py#main: an anchor into a file that is not a page",
    ]


def test_links_in_code_are_text(tmp_path):
    write(tmp_path, {
        "README.md": "# Top\n\n```\n[gone](gone.md)\n```\n\n    [gone](gone.md)\n\nUse `[gone](gone.md)` as is.\n",
    })
    proc = check(tmp_path)
    assert proc.returncode == 0, proc.stderr
