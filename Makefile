# The two commands of the README.
.PHONY: demo demo-down test docs changelog-preview

# A simulated two-node cluster on local podman, deployed end to end (Debian 12, root).
demo:
	tools/sandbox.sh demo

demo-down:
	tools/sandbox.sh down

# Every test stage (tests/run.sh), as CI runs it.
test:
	tests/run.sh

# The variable tables of docs/, from the roles' argument specs.
docs:
	.venv/bin/python tools/role_docs.py

# What antsibull-changelog would write into CHANGELOG.md for a release now.
changelog-preview:
	tools/changelog-preview.sh
