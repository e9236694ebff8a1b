#!/usr/bin/env bash
# The shared library exports exactly the functions and data runstore.h declares: nothing internal
# (sq_*, rs_json_*, rs_contract_*, ...) leaks, and nothing public is missing.
# usage: exports.sh HEADER LIBRARY.so
set -euo pipefail
header=$1 lib=$2
# functions, and the data an extern declares (rs_buf_empty, which RS_BUF_INIT names)
declared=$({ grep -v '^#define' "$header" | grep -oE '\brs_[a-z_0-9]+[[:space:]]*\(' | tr -d '( \t'
  grep -E '^extern ' "$header" | grep -oE '\brs_[a-z_0-9]+\[?' | tr -d '['; } | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sed 's/@.*//' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "exports differ from $header (< declared only, > exported only):"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
echo "exports: $(echo "$exported" | wc -l) symbols, all declared in runstore.h"
