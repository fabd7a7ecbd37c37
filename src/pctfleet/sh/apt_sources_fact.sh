# shellcheck shell=sh
# What `apt_repository` reads: every one-line sources file apt reads (sources.list, then
# sources.list.d/*.list), as numbered fields: fileN (path), modeN and contentN (base64).
# inputs: SOURCES_LIST SOURCES_DIR
as_n=0
for as_f in "$SOURCES_LIST" "$SOURCES_DIR"/*.list; do
  [ -f "$as_f" ] || continue
  as_n=$((as_n + 1))
  pf_kv "file$as_n" "$as_f"
  pf_kv "mode$as_n" "$(stat -c %a -- "$as_f")"
  pf_kv "content$as_n" "$(base64 -w0 < "$as_f")"
done
