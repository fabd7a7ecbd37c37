# shellcheck shell=sh
# A file, or its last TAIL_LINES lines when that is set, base64-encoded on one line.
# inputs: FILE TAIL_LINES
if [ -n "$TAIL_LINES" ]; then tail -n "$TAIL_LINES" "$FILE"; else cat "$FILE"; fi | base64 -w0
