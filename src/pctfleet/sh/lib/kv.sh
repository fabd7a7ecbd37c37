# shellcheck shell=sh
# pf_kv KEY VALUE: the one way a probe prints a fact, on one line: `KEY=~VALUE` when the
# value is only plain characters (no fork: most facts are a word, a number or a path),
# else `KEY=` and the value base64-encoded. The class is spelt out, not a range, so no
# locale can widen it; it holds no newline, `=`, `~`, space or control character.
pf_kv() {
  case $2 in
    '') printf '%s=\n' "$1" ;;
    *[!ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/@+,:-]*)
      printf '%s=' "$1"; printf '%s' "$2" | base64 -w0; echo ;;
    *) printf '%s=~%s\n' "$1" "$2" ;;
  esac
}
