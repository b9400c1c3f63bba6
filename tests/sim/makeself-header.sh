#!/usr/bin/env bash
# Write a makeself header that behaves like CANN's .run headers: it accepts
# --extract=DIR and passes the flags it does not know (--full, --install,
# --install-path=...) to the installer; makeself's stock header refuses both.
# Usage: makeself-header.sh OUTFILE
set -euo pipefail
out=${1:?usage: makeself-header.sh OUTFILE}
awk '
  /^    --\)$/ && !done {
    print "    --extract=*)"
    print "\tkeep=y"
    print "\ttargetdir=\"\\${1#--extract=}\""
    print "\tshift"
    print "\t;;"
    done = 1
  }
  /echo Unrecognized flag/ { print "\tbreak ;;"; skip = 3; next }
  skip > 0 { skip--; next }
  { print }
' /usr/share/makeself/makeself-header.sh > "$out"
grep -q -- '--extract=\*)' "$out" || { echo "makeself-header: could not patch the makeself header" >&2; exit 1; }
