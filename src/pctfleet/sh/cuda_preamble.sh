# inputs: VENV CH_ARG
# uses: cuda_env
# shellcheck shell=sh
# $VENV and $CH (never '') for the rest of a script; audit's snippets start with it.
pctfleet_cuda_env "$VENV" "$CH_ARG"
