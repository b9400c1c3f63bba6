# The two commands of the README.
.PHONY: demo demo-down test

# A simulated two-node cluster on local podman, deployed end to end (Debian 12, root).
demo:
	tools/sandbox.sh demo

demo-down:
	tools/sandbox.sh down

# Every test stage (tests/run.sh), as CI runs it.
test:
	tests/run.sh
