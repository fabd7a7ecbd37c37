# shellcheck shell=sh
# What is at each path of a copied folder ("$@": absolute paths, the destination's
# folders first), without following a link, in one pass and two batched commands:
# `kinds` one letter per path (a absent, l link, d folder, f regular file, o other);
# `stat` a line "MODE OWNER GROUP" per path that exists, in order; `sums` a sha256sum
# line per regular file, in order; `targetN` the target of the link at path N. KINDS_ONLY=1:
# only `kinds` (the folders above a single file: which ones the copy makes).
# inputs: KINDS_ONLY
ct_kinds='' ct_i=0
for ct_p do
  if [ -L "$ct_p" ]; then ct_kinds="${ct_kinds}l"; pf_kv "target$ct_i" "$(readlink -- "$ct_p")"
  elif [ -d "$ct_p" ]; then ct_kinds="${ct_kinds}d"
  elif [ -f "$ct_p" ]; then ct_kinds="${ct_kinds}f"
  elif [ -e "$ct_p" ]; then ct_kinds="${ct_kinds}o"
  else ct_kinds="${ct_kinds}a"; fi
  ct_i=$((ct_i + 1))
done
pf_kv kinds "$ct_kinds"
if [ "$KINDS_ONLY" = 1 ]; then exit 0; fi
case $ct_kinds in *[!a]*) ;; *) exit 0 ;; esac
pf_kv stat "$(for ct_p do
  if [ -e "$ct_p" ] || [ -L "$ct_p" ]; then printf '%s\0' "$ct_p"; fi
done | xargs -0 -r stat -c '%a %U %G' --)"
case $ct_kinds in *f*) ;; *) exit 0 ;; esac
pf_kv sums "$(for ct_p do
  if [ -f "$ct_p" ] && [ ! -L "$ct_p" ]; then printf '%s\0' "$ct_p"; fi
done | xargs -0 -r sha256sum --)"
