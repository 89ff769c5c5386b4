#!/usr/bin/env bash
# Short runs of `zaya bench coll` and `zaya bench mem` with their results checked.
#   bench_coll_run.sh MPIEXEC ZAYA NP MODE
# MODE: check   every collective, both dtypes, all ops: 0 wrong values in the table and in coll.json
#       sweep   rank-count sweep with packed and spread groups: rows for every group size
#       inject  --inject-wrong: the run must FAIL and count the corrupted elements (every collective,
#               reduce at root 0 and root 1)
#       blocking -z 2: both timing paths, named in the header; per-rank count of reduce-scatter
#       badsize -b 4X must be rejected with exit 2 naming the suffix
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
