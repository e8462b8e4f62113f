#!/usr/bin/env bash
# Every JSON text mesh-host writes goes through util/text_safe.hh (jsonData, jsonOut,
# jsonString): one way with bytes that are not UTF-8, never a throw (docs/json.md). A
# direct nlohmann dump() anywhere else in src/ fails this check, naming the line.
# Usage: one_json_writer.sh SRC_DIR
set -euo pipefail
src=${1:?usage: one_json_writer.sh SRC_DIR}
found=$(grep -rnE '(\.|->)dump\(' "$src" --include='*.cc' --include='*.hh' |
        grep -v '^[^:]*/util/text_safe\.cc:' | grep -vE ':[0-9]+: *//' || true)
if [ -n "$found" ]; then
  echo "nlohmann dump() outside src/util/text_safe.cc; use jsonData or jsonOut (util/text_safe.hh):"
  echo "$found"
  exit 1
fi
echo "every JSON writer is util/text_safe.hh's"
