"""Relative links of README.md and docs/: every target file exists and every #anchor is a heading there.

    python3 tools/check_links.py [--repo DIR]    exit 1 naming each broken link (file:line: target: why)

Anchors are GitHub's: a heading lowercased, without punctuation but `-` and `_`, spaces made `-`, a repeated
heading suffixed -1, -2. Links in code (fenced, indented, `inline`) are text, not links; links with a scheme
(https:, mailto:) are not followed (the build machines reach no site).
"""

import argparse
import glob
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def prose_lines(text):
    """(line number, line) of the text outside fenced and indented code blocks, inline code blanked."""
    fence, previous_blank = None, True
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(```+|~~~+)", stripped)
        if fence:
            if marker and stripped.startswith(fence):
                fence = None
            previous_blank = False
            continue
        if marker:
            fence = marker.group(1)
            continue
        if line.startswith("    ") and previous_blank and not stripped.startswith(("-", "*", "|")):
            continue  # an indented code block (its following lines keep previous_blank True)
        previous_blank = not line.strip()
        yield number, INLINE_CODE.sub(lambda match: " " * len(match.group(0)), line)


def slug(heading):
    text = heading.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


_ANCHORS = {}


def anchors(path):
    cache = _ANCHORS
    if path not in cache:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        found, seen = set(), {}
        lines = text.splitlines()
        for number, line in prose_lines(text):
            if not HEADING.match(line):
                continue
            # Inline code was blanked to find links; the anchor is made of the heading as written.
            base = slug(HEADING.match(lines[number - 1]).group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else "%s-%d" % (base, count))
        cache[path] = found
    return cache[path]


def broken_links(repo):
    """[(file relative to REPO, line, target, why)] of README.md and docs/**/*.md."""
    pages = [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "**", "*.md"),
                                                                 recursive=True))
    problems = []
    for page in pages:
        with open(page, encoding="utf-8") as handle:
            text = handle.read()
        for number, line in prose_lines(text):
            for match in LINK.finditer(line):
                target = match.group(1)
                if SCHEME.match(target):
                    continue
                path, _hash, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = (os.path.relpath(page, repo), number, target)
                if not os.path.realpath(resolved).startswith(os.path.realpath(repo) + os.sep):
                    problems.append(where + ("outside the repository",))
                elif not os.path.exists(resolved):
                    problems.append(where + ("no such file",))
                elif anchor and not resolved.endswith(".md"):
                    problems.append(where + ("an anchor into a file that is not a page",))
                elif anchor and anchor not in anchors(resolved):
                    problems.append(where + ("no heading %r in %s" % (anchor, os.path.relpath(resolved, repo)),))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=REPO)
    args = parser.parse_args(argv)
    problems = broken_links(os.path.abspath(args.repo))
    for page, number, target, why in problems:
        print("%s:%d: %s: %s" % (page, number, target, why), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
