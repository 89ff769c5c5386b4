#!/usr/bin/env bash
# Short runs of `zaya bench coll` and `zaya bench mem` with their results checked.
#   bench_coll_run.sh MPIEXEC ZAYA NP MODE
# MODE: check   every collective, both dtypes, all ops: 0 wrong values in the table and in coll.json
#       sweep   rank-count sweep with packed and spread groups: rows for every group size
#       inject  --inject-wrong: the run must FAIL and count the corrupted elements (every collective,
#               reduce at root 0 and root 1)
#       blocking -z 2: both timing paths, named in the header; per-rank count of reduce-scatter
#       badsize -b 4X must be rejected with exit 2 naming the suffix
#       agg     -m 4: four operations per timed sample (counted calls), reported per operation
#       average -a 0..3: the reported time is rank 0's / the average / min / max; min <= avg <= max
#       cycles  -N 2: two cycles printed and recorded; -N 0: until SIGINT to one rank, then exit 0
#       cputime -C 1: CPU time, labelled in the header and coll.json
#       report  -J FILE: the JSON report's keys and values; an unwritable -J fails before the run
#       flags   bad values of the nccl-tests flags: exit 2 naming the flag and value (no MPI)
#       mem     short bench mem: validated STREAM figures in mem.json
set -u
mpiexec="$1"; zaya="$2"; np="$3"; mode="$4"
out=$(mktemp -d /tmp/zaya_bench_XXXXXX)
trap 'rm -rf "$out"' EXIT
mpirun=("$mpiexec" -np "$np" --allow-run-as-root --oversubscribe)
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
json() { "$py" -c "import json,sys; d=json.load(open('$1')); print($2)"; }

case "$mode" in
check)
  "${mpirun[@]}" "$zaya" bench coll -b 8 -e 16K -f 4 -n 3 -w 1 -c 2 --coll all -d all -o all --out "$out" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc = 0 ] || fail "exit code $rc"
  grep -q "# Out of bounds values (all tests) : 0 OK" "$out/log" || fail "footer does not report 0 wrong"
  grep -q "FAILED" "$out/log" && fail "a block FAILED"
  [ "$(json "$out/coll.json" "d['wrong_total']")" = 0 ] || fail "coll.json wrong_total != 0"
  # every row was checked (wrong == 0, not -1): 38 (collective, dtype, op) groups x up to 6 sizes
  bad=$(json "$out/coll.json" "sum(1 for r in d['results'] if r['out_of_place']['wrong']!=0 or r['in_place']['wrong']!=0)")
  rows=$(json "$out/coll.json" "len(d['results'])")
  [ "$bad" = 0 ] || fail "$bad rows not checked or wrong"
  [ "$rows" -ge 200 ] || fail "only $rows rows"
  groups=$(json "$out/coll.json" "len(d['summary'])")
  [ "$groups" = 38 ] || fail "expected 38 groups, got $groups"
  head -1 "$out/coll.csv" | grep -q "^coll,ranks,placement" || fail "coll.csv header"
  [ -s "$out/coll_allreduce_busbw.png" ] || fail "no busbw plot"
  # overall progress: the last line counts every row of the plan
  grep -q "{\"progress\":\"bench coll\",\"done\":$rows,\"total\":$rows," "$out/log" || fail "no k-of-N progress line for $rows rows"
  # binary size labels on the plots' x axis (not 1.04858e+06)
  grep -q '"8" 8, "16" 16, "32" 32' "$out/coll_allreduce_busbw.gp" || fail "busbw plot: no binary tics from 8 B"
  grep -q '"8K" 8192)' "$out/coll_allreduce_busbw.gp" || fail "busbw plot: no 8K tic (the largest size)";;
sweep)
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 64K -n 3 -w 1 --coll allreduce,alltoall --sweep --placement both --out "$out" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc = 0 ] || fail "exit code $rc"
  groups=$(json "$out/coll.json" "sorted(set((s['ranks'],s['placement']) for s in d['summary']))")
  echo "groups: $groups"
  [ "$groups" = "[(2, 'packed'), (2, 'spread'), (4, 'packed')]" ] || fail "unexpected groups $groups";;
inject)
  "${mpirun[@]}" "$zaya" bench coll -b 8 -e 64 -n 2 -w 1 --coll allreduce,allgather --inject-wrong --out "$out" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc != 0 ] || fail "a corrupted result did not fail the run"
  grep -q "Out of bounds values : [1-9][0-9]* FAILED" "$out/log" || fail "footer does not report FAILED"
  # one corrupted element per checked variant: 2 collectives x 4 sizes x 2 variants (allgather's
  # smallest size is skipped when 8 bytes cannot be split over the ranks)
  w=$(json "$out/coll.json" "d['wrong_total']")
  n=$(json "$out/coll.json" "2*len(d['results'])")
  [ "$w" = "$n" ] || fail "wrong_total $w, expected $n"
  # every collective, reduce with the default root 0 and with root 1: each checked variant of every
  # row must count its corrupted element
  for r in 0 1; do
    "${mpirun[@]}" "$zaya" bench coll -b 64 -e 256 -n 2 -w 1 --coll all -r $r --inject-wrong --out "$out/r$r" >"$out/log" 2>&1
    rc=$?; cat "$out/log"
    [ $rc != 0 ] || fail "root $r: a corrupted result did not fail the run"
    bad=$(json "$out/r$r/coll.json" "[(x['coll'],x['bytes']) for x in d['results'] if x['out_of_place']['wrong']!=1 or x['in_place']['wrong']!=1]")
    [ "$bad" = "[]" ] || fail "root $r: rows without exactly one wrong element per variant: $bad"
    colls=$(json "$out/r$r/coll.json" "len(set(x['coll'] for x in d['results']))")
    [ "$colls" = 7 ] || fail "root $r: $colls collectives, want 7"
  done;;
blocking)
  # -z 2: every size timed non-blocking and blocking, told apart in the table, summary, json and csv
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 4K -n 2 -w 1 -z 2 --coll allreduce,reducescatter --out "$out" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc = 0 ] || fail "exit code $rc"
  grep -q "timed calls: MPI_I\* start + MPI_Wait (-z 0" "$out/log" || fail "header does not name the -z 0 path"
  grep -q "timed calls: blocking MPI collectives (-z 1" "$out/log" || fail "header does not name the -z 1 path"
  modes=$(json "$out/coll.json" "sorted(set((s['coll'],s['blocking']) for s in d['summary']))")
  [ "$modes" = "[('allreduce', 0), ('allreduce', 1), ('reducescatter', 0), ('reducescatter', 1)]" ] || fail "modes $modes"
  # nccl-tests count: reduce-scatter prints the per-rank count (4K float over 2 ranks: 512)
  c=$(json "$out/coll.json" "[x['count'] for x in d['results'] if x['coll']=='reducescatter' and x['bytes']==4096][0]")
  [ "$c" = 512 ] || fail "reducescatter count at 4K is $c, want 512 (per rank)"
  tail -1 "$out/coll.csv" | grep -q ",1$" || fail "csv has no blocking column"
  "$zaya" bench coll --help | grep -q "libnbc" || fail "--help does not explain -z 0"
  msg=$("$zaya" bench coll -z 3 2>&1); [ $? = 2 ] || fail "-z 3 accepted"
  grep -q "\-z takes 0, 1 or 2" <<<"$msg" || fail "-z 3 message: $msg";;
badsize)
  msg=$("$zaya" bench coll -b 4X 2>&1); rc=$?
  echo "$msg"
  [ $rc = 2 ] || fail "exit $rc, want 2"
  grep -q "unknown size suffix 'X'" <<<"$msg" || fail "message does not name the suffix";;
agg)
  for m in 1 4; do
    "${mpirun[@]}" "$zaya" bench coll -b 1K -e 8K -n 3 -w 1 -m $m --coll allreduce,broadcast --out "$out/m$m" >"$out/log" 2>&1
    rc=$?; cat "$out/log"
    [ $rc = 0 ] || fail "-m $m: exit code $rc"
    grep -q "agg iters: $m validation" "$out/log" || fail "-m $m: header does not say agg iters: $m"
    # every timed variant made 3 samples x m calls on every rank (counted in the loop)
    bad=$(json "$out/m$m/coll.json" "[(x['coll'],x['bytes']) for x in d['results'] if x['out_of_place']['calls']!=3*$m or x['in_place']['calls']!=3*$m]")
    [ "$bad" = "[]" ] || fail "-m $m: rows without 3 x $m timed calls: $bad"
    [ "$(json "$out/m$m/coll.json" "d['options']['agg_iters']")" = $m ] || fail "-m $m: options.agg_iters"
  done
  msg=$("$zaya" bench coll -m 0 2>&1); [ $? = 2 ] || fail "-m 0 accepted"
  grep -q "\-m/--agg_iters must be in 1..1000000 (got 0)" <<<"$msg" || fail "-m 0 message: $msg";;
average)
  # one run per mode; in each, the reported time is the chosen statistic of the same four
  for a in 0 1 2 3; do
    "${mpirun[@]}" "$zaya" bench coll -b 1K -e 16K -n 5 -w 1 -a $a --coll allreduce,reduce --out "$out/a$a" >"$out/log" 2>&1
    rc=$?; cat "$out/log"
    [ $rc = 0 ] || fail "-a $a: exit code $rc"
    grep -q "over ranks of each rank's mean (-a $a)" "$out/log" || fail "-a $a: header does not name the mode"
    key=$(echo "rank0_us avg_us min_us max_us" | cut -d' ' -f$((a + 1)))
    bad=$(json "$out/a$a/coll.json" "[(x['coll'],x['bytes']) for x in d['results'] for v in (x['out_of_place'],x['in_place']) if v['time_us']!=v['$key'] or not (v['min_us']<=v['avg_us']<=v['max_us']) or not (v['min_us']<=v['rank0_us']<=v['max_us']) or v['min_us']<=0]")
    [ "$bad" = "[]" ] || fail "-a $a: time_us is not $key, or min <= avg, rank0 <= max fails: $bad"
    # algbw follows the reported time
    bad=$(json "$out/a$a/coll.json" "[x['bytes'] for x in d['results'] if abs(x['out_of_place']['algbw_GBps']-x['bytes']/x['out_of_place']['time_us']/1e3)>1e-9*x['out_of_place']['algbw_GBps']]")
    [ "$bad" = "[]" ] || fail "-a $a: algbw not from the reported time: $bad"
  done
  # two ranks never time exactly alike: max is above min somewhere
  [ "$(json "$out/a3/coll.json" "any(x['out_of_place']['max_us']>x['out_of_place']['min_us'] for x in d['results'])")" = True ] || fail "min == max everywhere"
  msg=$("$zaya" bench coll -a 4 2>&1); [ $? = 2 ] || fail "-a 4 accepted"
  grep -q "\-a/--average takes 0 (rank 0), 1 (average), 2 (min) or 3 (max); got 4" <<<"$msg" || fail "-a 4 message: $msg";;
cycles)
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 8K -n 2 -w 1 -N 2 --out "$out" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc = 0 ] || fail "-N 2: exit code $rc"
  grep -q "^# cycle 1 of 2 (-N 2)" "$out/log" && grep -q "^# cycle 2 of 2 (-N 2)" "$out/log" || fail "-N 2: cycle lines"
  [ "$(grep -c "^# Collective test starting: all_reduce_perf" "$out/log")" = 2 ] || fail "-N 2: not two blocks"
  [ "$(grep -c "^# cycle" "$out/log")" = 2 ] || fail "-N 2: not two cycles"
  [ "$(json "$out/coll.json" "(d['cycles'], d['stopped'], [sum(1 for x in d['results'] if x['cycle']==c) for c in (1,2)])")" = "(2, False, [4, 4])" ] || fail "-N 2: coll.json cycles"
  [ "$(json "$out/coll.json" "[s['cycle'] for s in d['summary']]")" = "[1, 2]" ] || fail "-N 2: one summary per cycle"
  [ "$(tail -1 "$out/coll.csv" | awk -F, '{print $NF}')" = 2 ] || fail "-N 2: csv cycle column"
  # -N 0: cycles until a stop request; SIGINT to rank 1 alone ends every rank after the cycle in
  # progress, results written, exit 0
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 8K -n 2 -w 1 -N 0 --out "$out/n0" >"$out/log0" 2>&1 &
  mp=$!
  for i in $(seq 100); do [ "$(grep -c '^# cycle' "$out/log0")" -ge 3 ] && break; sleep 0.1; done
  pid=$(grep "Rank  1 Group" "$out/log0" | awk '{print $7}')
  [ -n "$pid" ] || { kill $mp; fail "-N 0: no pid of rank 1"; }
  kill -INT "$pid"
  for i in $(seq 200); do kill -0 $mp 2>/dev/null || break; sleep 0.1; done
  kill -0 $mp 2>/dev/null && { kill -KILL $mp; fail "-N 0: still running 20 s after SIGINT"; }
  wait $mp; rc=$?
  tail -5 "$out/log0"
  [ $rc = 0 ] || fail "-N 0: exit code $rc after SIGINT"
  k=$(grep -c "^# cycle [0-9]* (-N 0" "$out/log0")
  [ "$k" -ge 3 ] || fail "-N 0: only $k cycles before the stop"
  grep -q "^# stopped by a signal after $k cycles (-N 0)" "$out/log0" || fail "-N 0: no stop line for $k cycles"
  [ "$(json "$out/n0/coll.json" "(d['cycles'], d['stopped'], len(d['results']), d['options']['run_cycles'])")" = "($k, True, $((4 * k)), 0)" ] || fail "-N 0: coll.json"
  msg=$("$zaya" bench coll -N -1 2>&1); [ $? = 2 ] || fail "-N -1 accepted"
  grep -q "\-N/--run_cycles must be >= 0 (got -1)" <<<"$msg" || fail "-N -1 message: $msg";;
cputime)
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 8K -n 3 -w 1 -C 1 --out "$out" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc = 0 ] || fail "-C 1: exit code $rc"
  grep -q "CPU time of the process, every thread (-C 1: CPU time)" "$out/log" || fail "-C 1: header does not say CPU time"
  [ "$(json "$out/coll.json" "(d['options']['report_cputime'], d['options']['time_kind'])")" = "(1, 'process_cpu')" ] || fail "-C 1: coll.json"
  [ "$(json "$out/coll.json" "all(x['out_of_place']['time_us']>0 for x in d['results'])")" = True ] || fail "-C 1: a zero CPU time"
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 1K -n 2 -w 1 --out "$out/wall" >"$out/log" 2>&1 || fail "-C 0 run"
  grep -q "wall time (-C 0)" "$out/log" || fail "-C 0: header does not say wall time"
  [ "$(json "$out/wall/coll.json" "d['options']['time_kind']")" = wall ] || fail "-C 0: time_kind"
  msg=$("$zaya" bench coll -C 2 2>&1); [ $? = 2 ] || fail "-C 2 accepted"
  grep -q "\-C/--report_cputime takes 0 or 1 (got 2)" <<<"$msg" || fail "-C 2 message: $msg";;
report)
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 4K -n 2 -w 1 --coll allreduce,allgather -J "$out/report.json" --out "$out/o" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc = 0 ] || fail "-J: exit code $rc"
  grep -q "# report written to $out/report.json (-J)" "$out/log" || fail "-J: no report line"
  "$py" - "$out/report.json" "$out/o/coll.json" "$np" <<'PYEOF' || fail "-J: report check"
import json, sys, datetime, socket
r = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2])); np_ = int(sys.argv[3])
need = ["format", "hostname", "hosts", "libraries", "devices", "env", "start_time", "end_time", "duration_s",
        "command_line", "argv", "options", "results", "summary", "wrong_total", "world_size", "backend"]
missing = [k for k in need if k not in r]
assert not missing, f"missing keys {missing}"
assert r["format"] == "zaya-bench-coll-report", r["format"]
assert r["hostname"] == socket.gethostname() and r["hosts"] == [r["hostname"]], (r["hostname"], r["hosts"])
assert "Open MPI" in r["libraries"]["mpi"] and r["libraries"]["mpi_standard"].count(".") == 1, r["libraries"]
assert r["libraries"]["nccl"] is None, "nccl version without --backend nccl"
d = r["devices"]
assert [x["rank"] for x in d] == list(range(np_)) and len(set(x["pid"] for x in d)) == np_, d
assert all(x["kind"] == "cpu" and x["name"] for x in d), d
t0 = datetime.datetime.strptime(r["start_time"], "%Y-%m-%dT%H:%M:%S.%fZ")
t1 = datetime.datetime.strptime(r["end_time"], "%Y-%m-%dT%H:%M:%S.%fZ")
assert t0 <= t1 and abs((t1 - t0).total_seconds() - r["duration_s"]) < 0.01, (t0, t1, r["duration_s"])
assert abs((datetime.datetime.utcnow() - t1).total_seconds()) < 120, "end time is not now"
assert r["env"].get("OMPI_COMM_WORLD_SIZE") == str(np_), r["env"]
assert not any(k.startswith("OMPI_MCA_orte_") for k in r["env"]), "launcher internals in env"
assert r["argv"][:2] == ["-b", "1K"] and "-J" in r["argv"], r["argv"]
assert r["command_line"].startswith("zaya bench coll -b 1K -e 4K"), r["command_line"]
assert r["results"] == c["results"] and r["summary"] == c["summary"], "rows differ from coll.json"
assert len(r["results"]) == 6 and r["wrong_total"] == 0, (len(r["results"]), r["wrong_total"])
print("report ok:", r["libraries"]["mpi"])
PYEOF
  # a report that cannot be written fails before the run, naming the flag and the directory
  "${mpirun[@]}" "$zaya" bench coll -b 1K -e 1K -n 2 -J "$out/missing/r.json" --out "$out/o2" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc != 0 ] || fail "-J into a missing directory succeeded"
  grep -q "\-J/--output_file '$out/missing/r.json': directory '$out/missing' is not writable" "$out/log" || fail "-J: message"
  grep -q "Collective test starting" "$out/log" && fail "-J: the run started before the check"
  [ -e "$out/o2/coll.json" ] && fail "-J: results written after a failed check";;
flags)
  # every bad value of the nccl-tests flags: exit 2, the flag (short/long) and the value named
  bad() {
    local want="$1"; shift
    msg=$("$zaya" bench coll "$@" 2>&1); rc=$?
    [ $rc = 2 ] || fail "'$*': exit $rc, want 2 ($msg)"
    grep -qF -- "$want" <<<"$msg" || fail "'$*': message '$msg' does not contain '$want'"
  }
  bad "-a/--average takes 0 (rank 0), 1 (average), 2 (min) or 3 (max); got 4" -a 4
  bad "-a/--average takes 0 (rank 0), 1 (average), 2 (min) or 3 (max); got -1" --average -1
  bad "-m/--agg_iters must be in 1..1000000 (got 0)" --agg_iters 0
  bad "-N/--run_cycles must be >= 0 (got -3)" --run_cycles -3
  bad "-C/--report_cputime takes 0 or 1 (got 7)" --report_cputime 7
  bad "-g/--ngpus 2 needs --backend nccl" -g 2
  bad "-g/--ngpus must be in 1..64 (got 0)" --ngpus 0
  bad "-t/--nthreads 2: only 1" -t 2
  bad "-G/--cudagraph 1: CUDA graphs are a GPU option" -G 1
  bad "-G/--cudagraph 3: CUDA graphs are not supported" --cudagraph 3 --backend nccl
  bad "-G/--cudagraph must be >= 0 (got -1)" -G -1
  bad "-J/--output_file: empty file name" -J ""
  bad "option '-a': 'x' is not an integer" -a x
  bad "-t/--nthreads 0: only 1" --nthreads 0
  # accepted spellings, parsed to the same values (long names as nccl-tests)
  got=$(ZAYA_CLI_PARSE_ONLY=1 "$zaya" bench coll --average 2 --agg_iters 3 --run_cycles 0 --report_cputime 1 --nthreads 1 --cudagraph 0 --ngpus 1 --output_file r.json 2>&1)
  for want in "--average int 2" "--agg_iters int 3" "--run_cycles int 0" "--report_cputime int 1" "--output_file string 'r.json'"; do
    grep -qF -- "$want" <<<"$got" || fail "parse-only output lacks '$want': $got"
  done
  help=$("$zaya" bench coll --help)
  for f in "-a, --average" "-m, --agg_iters" "-N, --run_cycles" "-C, --report_cputime" "-g, --ngpus" "-t, --nthreads" "-G, --cudagraph" "-J, --output_file"; do
    grep -qF -- "$f" <<<"$help" || fail "--help does not list '$f'"
  done;;
mem)
  "$zaya" bench mem --threads 2 --ntimes 3 --array-bytes 8M --ws-min 16K --ws-max 4M --out "$out" >"$out/log" 2>&1
  rc=$?; cat "$out/log"
  [ $rc = 0 ] || fail "exit code $rc"
  [ "$(json "$out/mem.json" "all(s['validated'] for s in d['stream'])")" = True ] || fail "not validated"
  [ "$(json "$out/mem.json" "d['memory']['triad_GBps'] > 0")" = True ] || fail "no triad figure"
  grep -q "NON-CONFORMING" "$out/log" || fail "small arrays must be labelled non-conforming"
  [ -s "$out/mem.csv" ] && [ -s "$out/mem_ws.csv" ] || fail "csv missing";;
*) fail "unknown mode $mode";;
esac
echo "ok: $mode"
