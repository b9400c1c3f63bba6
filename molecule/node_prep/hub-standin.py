#!/usr/bin/env python3
"""Test double of the Hugging Face hub's CLI (`hf download REPO --local-dir DIR [--revision REV]`), for the
model role's hub source: no hub is reachable from the test machines. It "downloads" REPO from a directory on
the node (HUB_STANDIN_ROOT/REPO, default /opt/hub-standin/REPO) and, as huggingface_hub's local-dir download
does, copies only files that differ and keeps per-file metadata under DIR/.cache/huggingface/download/
(which the model role leaves out of the model). It fails like the real one for an unknown repository
(exit 1) and records each call in HUB_STANDIN_ROOT/calls.log, so a test can see how it was called.
"""

import argparse
import filecmp
import os
import shutil
import sys

ROOT = os.environ.get("HUB_STANDIN_ROOT", "/opt/hub-standin")


def main():
    parser = argparse.ArgumentParser(prog="hf")
    commands = parser.add_subparsers(dest="command", required=True)
    download = commands.add_parser("download")
    download.add_argument("repo_id")
    download.add_argument("--local-dir", required=True)
    download.add_argument("--revision", default="main")
    args = parser.parse_args()
    with open(os.path.join(ROOT, "calls.log"), "a") as log:
        log.write("%s HF_TOKEN=%s\n" % (" ".join(sys.argv[1:]), "set" if os.environ.get("HF_TOKEN") else "unset"))
    source = os.path.join(ROOT, args.repo_id)
    if not os.path.isdir(source):
        sys.stderr.write("404 Client Error: Repository Not Found for url: https://huggingface.co/api/models/%s\n"
                         % args.repo_id)
        return 1
    metadata = os.path.join(args.local_dir, ".cache", "huggingface", "download")
    for directory, _dirs, names in os.walk(source):
        for name in names:
            relative = os.path.relpath(os.path.join(directory, name), source)
            target = os.path.join(args.local_dir, relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not (os.path.exists(target) and filecmp.cmp(os.path.join(directory, name), target, shallow=False)):
                shutil.copy2(os.path.join(directory, name), target)
            os.makedirs(os.path.dirname(os.path.join(metadata, relative)), exist_ok=True)
            with open(os.path.join(metadata, relative + ".metadata"), "w") as handle:
                handle.write("%s\n" % args.revision)
    print(os.path.abspath(args.local_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
