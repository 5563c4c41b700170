#!/usr/bin/env bash
# End-to-end checks of the `attnspec` command line: help texts, exit
# statuses, error messages that name file and field, and that bad input
# leaves nothing written.
# Usage: tests/cli_test.sh SOURCE_DIR   (env: ATTNSPEC, PYTHON)
set -uo pipefail
source_dir="$1"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

check() {  # check NAME CONDITION...
  local name="$1"
  shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $name"; failed=$((failed + 1)); fi
}
run() {  # run EXPECTED_STATUS ARGS... ; output in $work/out.txt
  local expected="$1"
  shift
  "$ATTNSPEC" "$@" >"$work/out.txt" 2>&1
  local status=$?
  [ "$status" -eq "$expected" ] || { echo "  attnspec $*: exit $status, expected $expected"; cat "$work/out.txt"; return 1; }
}
says() { grep -q -- "$1" "$work/out.txt" || { echo "  output lacks '$1':"; cat "$work/out.txt"; return 1; }; }
absent() { for f in "$@"; do [ ! -e "$f" ] || { echo "  $f was written"; return 1; }; done; }
npy_shape() { "$python" -c "import sys; sys.path.insert(0, '$source_dir/scripts'); from independent import npy; print(list(npy.read_npy('$1')[1]))"; }

cp -r "$source_dir/cases/golden/gqa" "$work/good"
cp -r "$source_dir/cases/golden/seed_matrix" "$work/second"

check "help lists the reference command" run 0 --help
check "help text" says "reference"
check "reference help" run 0 reference --help
check "reference help names --format" says "--format"
check "no command is a usage error" run 2
check "unknown command" run 2 frobnicate

check "good case" run 0 reference "$work/good"
check "summary line" says "expected.json: .* agree"
check "ref.npy shape" test "$(npy_shape "$work/good/ref.npy")" = "[1, 4, 2, 2]"
check "ref_lse.npy shape" test "$(npy_shape "$work/good/ref_lse.npy")" = "[1, 4, 2]"
check "--out and --weights" run 0 reference "$work/good" --out "$work/custom.npy" --weights --format float16
check "--out writes FILE and FILE_lse" test -f "$work/custom.npy" -a -f "$work/custom_lse.npy" -a -f "$work/custom_weights.npy"
check "weights shape" test "$(npy_shape "$work/custom_weights.npy")" = "[1, 4, 2, 3]"

check "unknown format" run 2 reference "$work/second" --format float7
check "unknown format message" says "float7"
check "--out with two cases" run 2 reference "$work/second" "$work/good" --out "$work/x.npy"
check "missing directory" run 2 reference "$work/nowhere"

# A bad case among good ones: status 2, the file and field named, nothing written.
rm -f "$work"/good/ref*.npy
cp -r "$source_dir/cases/golden/gqa" "$work/bad"
sed -i 's/"kv_heads": 2/"kv_heads": 3/' "$work/bad/case.json"
check "bad case" run 2 reference "$work/good" "$work/bad"
check "bad case names file and field" says "bad/case.json: field 'q_heads'"
check "nothing written on bad input" absent "$work/good/ref.npy" "$work/bad/ref.npy"
cp -r "$source_dir/cases/golden/gqa" "$work/bad2"
"$python" -c "
import sys; sys.path.insert(0, '$source_dir/scripts'); from independent import npy
d, shape, v = npy.read_npy('$work/bad2/q.npy'); v = list(v); v[0] = 0.1
npy.write_npy('$work/bad2/q.npy', '<f8', shape, v)"
check "unrepresentable value" run 2 reference "$work/bad2"
check "unrepresentable value message" says "q.npy: field 'values': value 0.1"

# A wrong expected value is reported and gives status 1.
cp -r "$source_dir/cases/golden/seed_matrix" "$work/wrong"
"$python" -c "
import json; p = '$work/wrong/expected.json'; e = json.load(open(p)); e['out'][0] = '3.5'; json.dump(e, open(p, 'w'))"
check "mismatch with expected.json" run 1 reference "$work/wrong"
check "mismatch message" says "FIRST MISMATCH out\[0\]"

# kernels, run, check.
check "kernels" run 0 kernels
check "kernels lists online-bf16" says "online-bf16 *input bfloat16"
check "run with reports" run 0 run --kernel online-bf16 --clause PREC --clause FULLMASK --json "$work/report.json" \
  --junit "$work/report.xml" --save-failures "$work/failures"
check "run prints the clause line" says "PASS  PREC"
check "report.json" "$python" -c "
import json, sys; r = json.load(open('$work/report.json'))
assert r['format'] == 'attnspec-report/1' and r['kernel'] == 'online-bf16', r
assert [x['clause'] for x in r['results']] == ['FULLMASK', 'PREC'], r
assert all(x['status'] == 'pass' and x['dtype'] == 'bfloat16' for x in r['results'])"
check "report.xml" grep -q '<testcase classname="attnspec.online-bf16" name="PREC.bfloat16"' "$work/report.xml"
# A failing clause judges every case it draws, unless told to stop.
check "a failing clause judges every case" run 1 run --kernel mutant-scale-dmodel --clause SCALE --no-shrink \
  --save-failures "$work/every"
check "and counts its failing cases" says "of 100 judged drawn case(s) fail (small"
check "--stop-at-first-failure" run 1 run --kernel mutant-scale-dmodel --clause SCALE --no-shrink \
  --stop-at-first-failure --save-failures "$work/first"
check "says where it stopped" says "judging stopped at this first failure (--stop-at-first-failure)"
# --jobs: clauses in worker processes give the report of one process.
check "run in two worker processes" run 0 run --kernel online-bf16 --clause PREC --clause FULLMASK --clause SCALE \
  --jobs 2 --json "$work/jobs2.json"
check "says it uses workers" says "2 processes (--jobs)"
check "and in one" run 0 run --kernel online-bf16 --clause PREC --clause FULLMASK --clause SCALE --jobs 1 \
  --json "$work/jobs1.json"
check "the same report either way" "$python" -c "
import json
a, b = (json.load(open('$work/jobs%d.json' % n)) for n in (1, 2))
for r in a['results'] + b['results']: r.pop('seconds')
assert [x['clause'] for x in a['results']] == ['SCALE', 'FULLMASK', 'PREC'], a
assert a == b, (a, b)"
check "--jobs 0 is a usage error" run 2 run --kernel online-bf16 --jobs 0
# A worker killed in the middle of a clause: that clause fails as not
# judged, the other is judged. Its queue directory is found through TMPDIR.
mkdir -p "$work/tmp"
TMPDIR="$work/tmp" "$ATTNSPEC" run --kernel online-f32 --clause GRADREL --clause GRADPERM --jobs 2 --no-shrink \
  >"$work/killed.txt" 2>&1 &
runner=$!
killed=no
for _ in $(seq 1 600); do  # both clauses handed out: this process has one, the worker the other
  queue="$(cat "$work"/tmp/attnspec-workers-*/queue 2>/dev/null || true)"
  if [ -n "$queue" ] && [ "$((10#$queue))" -ge 2 ]; then
    pkill -KILL -f -- "--worker $work/tmp/" && killed=yes
    break
  fi
  sleep 0.1
done
wait "$runner"
status=$?
check "a killed worker's clause fails the run" [ "$killed" = yes ] && [ "$status" -eq 1 ]
check "as not judged, with the signal" grep -q "not judged: its worker process ended before reporting it (worker [0-9]* was killed by signal 9" "$work/killed.txt"
check "and the other clause is judged" grep -qE "^PASS  GRAD(REL|PERM)" "$work/killed.txt"
check "unknown kernel" run 2 run --kernel nope
check "unknown kernel message" says "unknown kernel 'nope'"
check "unknown clause" run 2 run --kernel online-bf16 --clause NOPE
check "unknown profile" run 2 run --kernel online-bf16 --profile slow
check "bad shard" run 2 run --kernel online-bf16 --shard 3/2
check "dtype the kernel lacks" run 2 run --kernel online-bf16 --dtype float32
check "json with two kernels" run 2 run --kernel naive-f64 --kernel online-f32 --json "$work/x.json"
check "check a golden case" run 0 check "$source_dir/cases/golden/seed_matrix" --kernel naive-f64
check "check says PASS" says "PASS"
check "check a case the kernel cannot represent" run 2 check "$source_dir/cases/golden/midpoint_tie" --kernel online-bf16
check "representability message" says "not all representable"
check "check a case the kernel lacks features for" run 0 check "$source_dir/cases/golden/gqa" --kernel online-f32

check "kernels --adapter shows a process adapter's hello" run 0 kernels --adapter "cmd:$python $source_dir/tests/process/faulty_adapter.py --fault none"
check "with its capabilities" says "capabilities: bool-mask additive-mask causal:top_left,bottom_right gqa"
check "kernels --adapter names a broken hello's field" run 2 kernels --adapter "cmd:$python $source_dir/tests/process/faulty_adapter.py --fault bad-hello"
check "and says which" says "capabilities.softCap"
check "kernels --adapter wants cmd:" run 2 kernels --adapter numpy
check "and says so" says "expected cmd:COMMAND"
check "kernels --mutants" run 0 kernels --mutants
check "mutant listed" says "mutant-gqa-modulo .*caught by GQA"
check "a mutant fails its clause" run 1 run --kernel mutant-gqa-modulo --clause GQA --save-failures "$work/mutant"
check "and says how to reproduce" says "reproduce: attnspec check $work/mutant/mutant-gqa-modulo_GQA --kernel mutant-gqa-modulo"
check "the counterexample reproduces" run 1 check "$work/mutant/mutant-gqa-modulo_GQA" --kernel mutant-gqa-modulo
check "check names the clause" says "saved by clause GQA"

# Process adapters (spec/SPEC.md section 8), with the deliberately faulty
# test adapter (standard library only).
faulty="cmd:$python $source_dir/tests/process/faulty_adapter.py"
check "empty cmd: is a usage error" run 2 run --kernel "cmd:"
check "an adapter that never answers hello" run 2 run --kernel "cmd:$python $source_dir/tests/process/faulty_adapter.py --fault silent"
check "which is said" says "ended without answering the hello"
check "check-adapter help" run 0 check-adapter --help
check "check-adapter of a good adapter" run 0 check-adapter "$faulty --fault none"
check "check-adapter says it speaks the protocol" says "adapter speaks attnspec-process/1"
check "check-adapter of a wrong-shape adapter" run 1 check-adapter "$faulty --fault wrong-shape"
check "names the shape" says "out.npy: field 'shape': expected \["
check "check-adapter of a misspelt hello" run 1 check-adapter "$faulty --fault bad-hello"
check "names the field" says "capabilities.softCap"
check "check-adapter wants cmd:" run 2 check-adapter naive-f64
check "a crashing adapter fails its clause and the run goes on" run 1 run --kernel "$faulty --fault crash" \
  --clause SCALE --clause ROWSUM --no-shrink --save-failures "$work/crash"
check "with the exit named" says "exited with status 3"
check "both clauses reported" says "ROWSUM"
check "a worker whose adapter never answers loses no clause" run 1 run \
  --kernel "$faulty --fault silent --after-first $work/after-first" --clause SCALE --clause ROWSUM --jobs 2 --no-shrink
check "the worker's end is said" says "ended without answering the hello"
check "and both clauses are judged here" says "FAIL  ROWSUM    float32 *[1-9][0-9]* cases"
check "a declining adapter is INCOMPLETE, which fails the run" run 1 run --kernel "$faulty --fault unsupported" --clause SCALE
check "with the reason" says "declined every case"
check "--allow-incomplete lets it pass" run 0 run --kernel "$faulty --fault unsupported" --clause SCALE --allow-incomplete
check "still reported" says "1 incomplete (allowed by --allow-incomplete)"
check "a kernel declaring fewer than 4096 logits is refused" run 2 run --kernel "$faulty --max-elements 100" --clause SCALE
check "naming the floor" says "max_elements 100, below the 4096"
check "reproduce line quotes the command" run 1 run --kernel "$faulty --fault error" --clause SCALE --no-shrink \
  --save-failures "$work/error"
check "quoted" says "--kernel 'cmd:"
check "a process adapter's JSON report" run 0 run --kernel "$faulty --fault unsupported" --clause SCALE --allow-incomplete \
  --json "$work/process.json"
check "says what was not judged" grep -q '"declined": [1-9].*"status": "incomplete"' <(tr -d '\n' <"$work/process.json")
check "names the command and the adapter's log" grep -q '"kernel_command": "cmd:.*"kernel_log": "' <(tr -d '\n' <"$work/process.json")

# A kernel this CPU cannot run (issue 10): oneDNN has no bf16 path below
# AVX-512, and ONEDNN_MAX_CPU_ISA=AVX2 makes any CPU such a CPU. Listed as
# not available, run reports it with exit status 3 and judges nothing.
if "$ATTNSPEC" kernels | grep -q '^onednn-bf16'; then
  capped() { ONEDNN_MAX_CPU_ISA=AVX2 run "$@"; }
  check "kernels lists an unavailable kernel" capped 0 kernels
  check "with the reason" says "onednn-bf16 *NOT AVAILABLE on this machine: .*avx512_core"
  check "and the CPU" says "^CPU: "
  check "run of an unavailable kernel" capped 3 run --kernel onednn-bf16 --clause PREC --json "$work/na.json" \
    --junit "$work/na.xml"
  check "says nothing was judged" says "not available on this machine, nothing judged"
  check "its JSON report" "$python" -c "
import json; r = json.load(open('$work/na.json'))
assert r['available'] is False and r['results'] == [] and 'avx512_core' in r['unavailable'], r
assert 'ONEDNN_MAX_CPU_ISA=AVX2' in r['unavailable'] and r['platform']['cpu_kind'], r"
  check "its JUnit report skips" grep -q '<skipped message="not available on this machine' "$work/na.xml"
  check "a failure elsewhere still exits 1" capped 1 run --kernel onednn-bf16 --kernel mutant-gqa-modulo --clause GQA \
    --no-shrink --save-failures "$work/na-failures"
  check "matrix shows N/A" says "| GQA | N/A | FAIL"
  check "check of an unavailable kernel" capped 3 check "$source_dir/cases/golden/seed_matrix" --kernel onednn-bf16
fi
check "a report names the CPU and code path" "$python" -c "
import json; r = json.load(open('$work/report.json'))
assert r['available'] is True and r['platform']['cpu'] and 'cpu_features' in r['platform'], r"

# audit (issue 6): bad options exit 2 and leave nothing written; a small
# audit writes the HTML (plots embedded), JSON, Markdown and the worst row,
# which `attnspec check` rechecks.
report="$work/audit.html"
check "audit help" run 0 audit --help
check "audit help names --sweep" says "--sweep"
check "audit bad --shape" run 2 audit --kernel online-f16 --shape 1,2,3 --html "$report"
check "bad --shape message" says "--shape: expected B,Hq,Hkv,L,S,Dk,Dv"
check "audit --shape with Hq not a multiple of Hkv" run 2 audit --kernel online-f16 --shape 1,3,2,4,4,4,4 --html "$report"
check "audit --shape with a zero" run 2 audit --kernel online-f16 --shape 1,2,1,0,4,4,4 --html "$report"
check "audit --shape too large to hold" run 2 audit --kernel online-f16 --shape 64,64,64,65536,65536,128,128 --html "$report"
check "says how much memory" says "GiB for its tensors"
check "audit unknown --dist" run 2 audit --kernel online-f16 --dist cauchy --html "$report"
check "unknown --dist message" says "--dist: unknown distribution 'cauchy'"
check "audit unknown --sweep" run 2 audit --kernel online-f16 --sweep L --html "$report"
check "audit --rows 0" run 2 audit --kernel online-f16 --rows 0 --html "$report"
check "audit without --html" run 2 audit --kernel online-f16
check "says --html is required" says "--html"
check "audit unknown kernel" run 2 audit --kernel nope --html "$report"
check "audit --dtype the kernel lacks" run 2 audit --kernel online-f16 --dtype bfloat16 --html "$report"
check "audit into a missing directory" run 2 audit --kernel online-f16 --html "$work/nowhere/a.html"
run_without_matplotlib() { ATTNSPEC_PLOT_PYTHON=/bin/false run "$@"; }
check "audit without matplotlib" run_without_matplotlib 2 audit --kernel online-f16 --shape 1,1,1,2,2,2,2 \
  --html "$report" --json "$work/audit.json"
check "says what to install" says "python3-matplotlib"
check "nothing written by bad audits" absent "$report" "$work/audit.json" "$work/audit_worst_case"
check "a small audit" run 0 audit --kernel online-f16 --shape 1,2,1,16,40,8,8 --dist outliers --html "$report" \
  --json "$work/audit.json" --md "$work/audit.md"
check "prints the Markdown summary" says "| RMSE |"
check "writes HTML, JSON, Markdown and the worst row" test -s "$report" -a -s "$work/audit.json" -a -s "$work/audit.md" \
  -a -f "$work/audit_worst_case/case.json"
check "the HTML embeds its plots" grep -q 'src="data:image/png;base64,' "$report"
check "audit.json" "$python" -c "
import json; r = json.load(open('$work/audit.json'))
assert r['format'] == 'attnspec-audit/1' and r['kernel'] == 'online-f16' and r['distribution'] == 'outliers', r
p = r['points'][0]
assert p['checked_rows'] == 32 and p['bound']['outside'] == 0 and p['kernel']['rmse'] >= p['floor']['rmse'] > 0, p"
check "the worst row rechecks" run 0 check "$work/audit_worst_case" --kernel online-f16
check "a sweep over S" run 0 audit --kernel composed-f16 --shape 1,1,1,4,64,8,8 --sweep S --html "$work/sweep.html"
check "reports growth exponents" says "Growth exponents"
check "kernels lists the emulated kernels" run 0 kernels
check "composed-f16 listed" says "composed-f16 *input float16"

# attnspec merge: the shards of a run make the run's report; mismatched or
# missing shards are refused with status 2 and nothing written.
for i in 0 1 2; do
  check "shard $i of 3" run 0 run --kernel online-f32 --clause SCALE --clause ROWSUM --clause PREC --clause PRECTIGHT \
    --clause GOLDEN --shard "$i/3" --no-shrink --json "$work/shard$i.json"
done
check "the whole run" run 0 run --kernel online-f32 --clause SCALE --clause ROWSUM --clause PREC --clause PRECTIGHT \
  --clause GOLDEN --no-shrink --json "$work/whole.json"
check "merge the shards" run 0 merge "$work/shard2.json" "$work/shard0.json" "$work/shard1.json" --json "$work/merged.json" \
  --junit "$work/merged.xml"
check "merge prints the matrix" says "| PRECTIGHT | PASS"
check "merged equals the whole run" "$python" -c "
import json
m, w = json.load(open('$work/merged.json')), json.load(open('$work/whole.json'))
key = lambda r: [(x['clause'], x['status'], x['cases'], x['max_error_u'], x['elements']) for x in r['results']]
assert key(m) == key(w), (key(m), key(w))
assert m['shard'] == {'index': 0, 'count': 1} and m['kernel'] == 'online-f32'"
check "merged JUnit" grep -q 'name="PRECTIGHT.float32"' "$work/merged.xml"
check "a shard missing" run 2 merge "$work/shard0.json" "$work/shard1.json" --json "$work/refused.json"
check "names the missing shard" says "2/3 missing"
check "a shard twice" run 2 merge "$work/shard0.json" "$work/shard0.json" "$work/shard1.json" --json "$work/refused.json"
"$ATTNSPEC" run --kernel online-bf16 --clause SCALE --shard 0/3 --no-shrink --json "$work/other.json" >/dev/null 2>&1
check "another kernel's shard" run 2 merge "$work/other.json" "$work/shard1.json" "$work/shard2.json" --json "$work/refused.json"
check "names the field" says "field 'kernel'"
echo '{"format": "attnspec-report/1", "kernel": 3}' >"$work/bad_report.json"
check "a malformed report" run 2 merge "$work/bad_report.json" --json "$work/refused.json"
check "says what the field should be" says "bad_report.json: field 'kernel': expected a string"
check "nothing written by refused merges" absent "$work/refused.json"

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
