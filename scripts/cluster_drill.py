#!/usr/bin/env python3
"""Fault drill across hosts: faults of a simulated cluster (scripts/cluster.sh, docs/cluster.md)
injected into a small run of `zaya supervise --hosts` over 2 hosts x 1 rank, and the table of
scripts/fault_drill.py (detected / recovered / bit-exact / steps lost / detect s / recover s) plus
goodput. Bit-exact: every safetensors file of the final checkpoint equal to an uninterrupted run with
the same world-size schedule (read from the attempts), trained on one host.

  scripts/cluster_drill.py [--zaya build/zaya] [--out out/cluster_drill] [--seed 1] [--trials 1]
                           [--cases host-kill,link-cut,...] [--quick] [--keep] [--list]

Cases: host-kill (the host's processes killed and its link cut, healed after the smaller world made
progress: host_lost, grow back), link-cut (the link only: a hang naming the rank and host, host_lost,
grow back), loss5 (5% packet loss on every link all run long: no hang, no restart), delay-spike (50 ms
delay on every link for a while: needs netem, else skipped with the reason), slow-host (host 1 at
1/100 of the CPU from a random step on: a straggler naming rank 1 and its host, no restart). --quick: link-cut and loss5
(the ctest cluster_drill_quick). Exit 77 when the cluster cannot be built here, 1 when a trial misses
what it must show. Every wait is on an event (a heartbeat's step, the supervisor's exit).
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, "cluster.sh")
CASES = ["host-kill", "link-cut", "loss5", "delay-spike", "slow-host"]
QUICK = ["link-cut", "loss5"]


def sh(args, env, **kw):
    return subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def hb(path, key):
    try:
        with open(path) as f:
            return json.load(f)[key]
    except Exception:
        return -1


def wait_for(path, key, minimum, proc, limit=300):
    t = time.time()
    while time.time() - t < limit:
        if hb(path, key) >= minimum:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def incidents(d):
    try:
        return [json.loads(l) for l in open(os.path.join(d, "incidents.jsonl")) if l.strip()]
    except OSError:
        return []


def schedule(supdir, suplog, steps):
    """[(world, start_step)] of every attempt, from the supervisor's lines and the attempt logs."""
    worlds = []
    for line in open(suplog, errors="replace"):
        if "launched" in line and "world " in line:
            worlds.append(int(line.split("world ")[1].split()[0]))
    out = []
    for i, w in enumerate(worlds, 1):
        start = 0
        try:
            for line in open(os.path.join(supdir, "attempt-%03d.log" % i), errors="replace"):
                if "resumed from" in line and "step-" in line:
                    start = int(line.split("step-")[1][:8])
        except OSError:
            pass
        out.append((w, start))
    return out


def same_final(a, b, steps):
    s = "step-%08d" % steps
    da, db = os.path.join(a, "ckpt", s), os.path.join(b, "ckpt", s)
    if not os.path.isdir(da) or not os.path.isdir(db):
        return False
    names = sorted(f for f in os.listdir(da) if f.endswith(".safetensors"))
    if not names or names != sorted(f for f in os.listdir(db) if f.endswith(".safetensors")):
        return False
    return all(open(os.path.join(da, n), "rb").read() == open(os.path.join(db, n), "rb").read() for n in names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zaya", default=os.path.join(HERE, "..", "build", "zaya"))
    ap.add_argument("--out", default="out/cluster_drill")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        print("\n".join(CASES))
        return 0
    cases = QUICK if a.quick else [c for c in a.cases.split(",") if c]
    bad = [c for c in cases if c not in CASES]
    if bad:
        print("cluster_drill: unknown case %s (--list)" % ", ".join(bad), file=sys.stderr)
        return 2
    zaya = os.path.abspath(a.zaya)
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="zaya_cluster_drill.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZAYA_")}
    env["ZAYA_CLUSTER_PREFIX"] = "zd%d" % (os.getpid() % 10000)
    env["ZAYA_CLUSTER_DIR"] = os.path.join(work, "cluster")
    env["OMP_WAIT_POLICY"] = "passive"
    rows = []
    try:
        up = sh([CLUSTER, "up", "2", "--slots", "1"], env)
        if up.returncode == 77:
            print(up.stdout.strip())
            print("SKIP: the simulated cluster cannot be built here")
            return 77
        if up.returncode != 0:
            print(up.stdout)
            return 1
        corpus = os.path.join(work, "corpus")
        r = sh([os.path.join(HERE, "..", "tests", "tiny_corpus.sh"), zaya, corpus], env)
        if r.returncode != 0:
            print(r.stdout)
            return 1
        with open(os.path.join(work, "hosts"), "w") as f:
            f.write("10.77.0.1 slots=1\n10.77.0.2 slots=1\n")
        netem = sh([CLUSTER, "shape", "1", "--delay", "1ms"], env)
        has_netem = netem.returncode == 0
        sh([CLUSTER, "shape", "1"], env)
        steps = 24
        train = ["--config", corpus + "/config.json", "--run", corpus + "/run.json", "--dtype", "f32", "--threads", "1",
                 "--save-every", "4", "--eval-every", "0", "--eval-batches", "1", "--samples", "0", "--peak-gflops", "100", "-q"]
        refs = {}

        def reference(sched):
            key = tuple(sched)
            if key in refs:
                return refs[key]
            d = os.path.join(work, "ref-%d" % len(refs))
            for k, (w, start) in enumerate(sched):
                end = sched[k + 1][1] if k + 1 < len(sched) else steps
                if end <= start and k + 1 < len(sched):
                    continue
                cmd = ([zaya] if w == 1 else ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                              "-x", "OMP_WAIT_POLICY", "-np", str(w), zaya])
                sh(cmd + ["train"] + train + ["--max-steps", str(end), "-o", d], env)
            refs[key] = d
            return d

        for case in cases:
            for trial in range(a.trials):
                rnd = random.Random("%d/%s/%d" % (a.seed, case, trial))
                t = os.path.join(work, "%s-%d" % (case, trial))
                os.makedirs(t)
                row = {"case": case, "trial": trial, "detected": 0, "recovered": 0, "bit_exact": 0, "steps_lost": 0,
                       "detect_s": None, "recover_s": None, "goodput": None, "notes": ""}
                if case == "delay-spike" and not has_netem:
                    row["notes"] = "skipped: " + netem.stdout.strip().split("cluster.sh: ")[-1][:120]
                    rows.append(row)
                    continue
                grow = case in ("host-kill", "link-cut")
                job_env = ["-x", "OMP_WAIT_POLICY"]
                if grow:  # rank 0 at least 0.6 s a step: the smaller world still runs when the host is back
                    job_env += ["-x", "ZAYA_FAULT_SLOW=0:0.6", "-x", "ZAYA_FAULT_ATTEMPTS=0"]
                sup = [CLUSTER, "exec", "0", zaya, "supervise", "--hosts", os.path.join(work, "hosts"), "--hang-floor", "3",
                       "--grace", "1", "--backoff", "0.2", "--host-check-timeout", "4", "--host-probe", "0.5", "--straggler-factor", "1.5",
                       "-o", t + "/sup", "--", "mpirun", "--allow-run-as-root", "--bind-to", "none"] + job_env + \
                      [zaya, "train"] + train + ["--max-steps", str(steps), "-o", t + "/run"]
                log = open(t + "/sup.log", "w")
                t0 = time.time()
                p = subprocess.Popen(sup, env=env, stdout=log, stderr=subprocess.STDOUT)
                # a slowed host from early on: the straggler check takes the median of the recent steps
                at = rnd.randint(2, 4) if case == "slow-host" else rnd.randint(5, 10)
                inj = None
                hb1 = t + "/sup/heartbeat/attempt-001/rank-00001.json"
                if case in ("host-kill", "link-cut", "loss5", "delay-spike", "slow-host"):
                    if wait_for(hb1, "step", at, p):
                        inj = time.time()
                        if case == "host-kill":
                            sh([CLUSTER, "kill", "1"], env)
                            sh([CLUSTER, "cut", "1"], env)
                        elif case == "link-cut":
                            sh([CLUSTER, "cut", "1"], env)
                        elif case == "slow-host":
                            sh([CLUSTER, "slow", "1", "100"], env)
                        elif case == "loss5":
                            for h in ("0", "1"):
                                sh([CLUSTER, "shape", h, "--loss", "5"], env)
                        else:
                            for h in ("0", "1"):
                                sh([CLUSTER, "shape", h, "--delay", "50ms"], env)
                            wait_for(hb1, "step", at + 3, p)
                            for h in ("0", "1"):
                                sh([CLUSTER, "shape", h], env)
                    if grow:
                        wait_for(t + "/sup/heartbeat/attempt-002/rank-00000.json", "steps_done", 2, p)
                        sh([CLUSTER, "heal", "1"], env)
                p.wait(timeout=900)
                log.close()
                for h in ("0", "1"):
                    sh([CLUSTER, "shape", h], env)
                sh([CLUSTER, "fast", "1"], env)
                sh([CLUSTER, "heal", "1"], env)
                inc = incidents(t + "/sup")
                kinds = [i["kind"] for i in inc]
                try:
                    summ = json.load(open(t + "/sup/summary.json"))
                except Exception:
                    summ = {}
                row["goodput"] = summ.get("goodput")
                row["recovered"] = int(p.returncode == 0 and bool(summ.get("completed")))
                failures = [i for i in inc if i["kind"] in ("crash", "hang")]
                row["steps_lost"] = sum(i.get("steps_lost") or 0 for i in failures)
                sched = schedule(t + "/sup", t + "/sup.log", steps)
                if grow:
                    lost = [i for i in inc if i["kind"] == "host_lost" and "10.77.0.2" in i["detail"]]
                    back = [i for i in inc if i["kind"] == "host_back"]
                    named = case != "link-cut" or any(i["kind"] == "hang" and "(host " in i["detail"] for i in inc)
                    row["detected"] = int(bool(lost) and bool(failures) and named)
                    if failures and inj:
                        row["detect_s"] = round(failures[0]["detected_at_s"] - (inj - t0), 2)
                        row["recover_s"] = failures[0].get("recovery_s")
                    row["notes"] = "%s; schedule %s; %s" % (
                        "/".join(sorted(set(i["kind"] for i in failures))) or "no failure",
                        " ".join("w%d@%d" % s for s in sched), "grew back" if back else "did not grow back")
                    row["recovered"] = int(row["recovered"] and bool(back) and [w for w, _ in sched][-1:] == [2])
                elif case == "slow-host":
                    st = [i for i in inc if i["kind"] == "straggler" and i["rank"] == 1]
                    row["detected"] = int(bool(st) and "host " in st[0]["detail"] and not failures)
                    row["notes"] = st[0]["detail"][:160] if st else "no straggler reported"
                else:
                    row["detected"] = int(not failures and len(sched) == 1)
                    row["notes"] = "no false hang, no restart" if row["detected"] else "restarted: " + ",".join(kinds)
                ref = reference(sched if sched else [(2, 0)])
                row["bit_exact"] = int(same_final(ref, t + "/run", steps))
                if case == "slow-host":
                    sh([CLUSTER, "fast", "1"], env)
                rows.append(row)
                ok = row["detected"] and row["recovered"] and row["bit_exact"]
                print("%-12s trial %d: %s  %s" % (case, trial, "ok" if ok or row["notes"].startswith("skipped") else "MISSED",
                                                   row["notes"]), flush=True)
                if not a.keep and ok:
                    shutil.rmtree(t, ignore_errors=True)
    finally:
        sh([CLUSTER, "down"], env)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    hdr = "| case | trials | detected | recovered | bit-exact | steps lost | detect s | recover s | goodput | notes |"
    lines = [hdr, "|" + "---|" * 10]
    for case in cases:
        rs = [r for r in rows if r["case"] == case]
        if not rs:
            continue
        mean = lambda k: (lambda v: "%.2f" % (sum(v) / len(v)) if v else "-")([r[k] for r in rs if r[k] is not None])
        lines.append("| %s | %d | %d | %d | %d | %.1f | %s | %s | %s | %s |" % (
            case, len(rs), sum(r["detected"] for r in rs), sum(r["recovered"] for r in rs), sum(r["bit_exact"] for r in rs),
            sum(r["steps_lost"] for r in rs) / len(rs), mean("detect_s"), mean("recover_s"), mean("goodput"), rs[-1]["notes"]))
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(a.out, "trials.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    missed = [r for r in rows if not r["notes"].startswith("skipped") and not (r["detected"] and r["recovered"] and r["bit_exact"])]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
