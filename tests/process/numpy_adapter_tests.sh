# Sourced by the NumPy adapter's tests, with SOURCE_DIR as $1 (env:
# ATTNSPEC): sets source_dir, python, work (removed at exit) and adapter
# (the float32 adapter's --kernel argument), and defines
# bugged NAME FILE FIND REPLACE CLAUSE, which runs a copy of the adapter
# (numpy_adapter.py and packed_cases.py) with one line of FILE changed
# that must fail CLAUSE in the quick profile, so that the PASS beside it
# can fail.
set -euo pipefail
source_dir="$1"
source "$source_dir/tests/process/numpy_python.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
adapter="cmd:$python $source_dir/adapters/python/numpy_adapter.py --dtype float32"

bugged() {
  local name="$1" file="$2" find="$3" replace="$4" clause="$5" copy="$work/$1"
  mkdir -p "$copy"
  cp "$source_dir/adapters/python/numpy_adapter.py" "$source_dir/adapters/python/packed_cases.py" "$copy/"
  "$python" - "$copy/$file" "$find" "$replace" <<'PY'
import sys
path, find, replace = sys.argv[1:]
text = open(path).read()
assert text.count(find) == 1, "the line to change is not in " + path + ": " + find
open(path, "w").write(text.replace(find, replace))
PY
  local status=0
  "$ATTNSPEC" run --kernel "cmd:$python $copy/numpy_adapter.py --dtype float32" --profile quick --no-shrink \
    --stop-at-first-failure --save-failures "$work/failures-$name" --clause "$clause" >"$work/$name.txt" 2>&1 || status=$?
  if [ "$status" -ne 1 ] || ! grep -q "^FAIL  $clause " "$work/$name.txt"; then
    cat "$work/$name.txt"
    echo "the adapter with bug '$name' was not caught by $clause (exit $status)"
    exit 1
  fi
  echo "bug '$name': FAIL $clause, as it should"
}
