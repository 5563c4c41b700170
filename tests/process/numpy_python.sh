# Sourced by the process tests that need NumPy: sets `python` to a Python 3
# that imports it (Debian's /usr/bin/python3 first), or exits 1 saying how
# to get one.
python=""
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c "import numpy" 2>/dev/null; then python="$candidate"; break; fi
done
[ -n "$python" ] || { echo "no python3 with NumPy (scripts/install-deps.sh installs python3-numpy)"; exit 1; }
