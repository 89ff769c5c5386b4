#!/usr/bin/env python3
"""Fault drill: faults injected from outside into small supervised training runs.

Every trial starts `zaya supervise ... -- [mpirun -np 2] zaya train ...` on a tiny model (40 steps,
a checkpoint every 4), waits for a random step (seeded), and injects one fault with nothing but
signals and file damage: kill -9, SIGSTOP, SIGTERM, kills timed against the checkpoint commit
(inotify on the checkpoint directory, polling where inotify is unavailable), a damaged `latest`, a
flipped bit or a truncation in a tensor file, a flipped digit in the manifest, a full disk (a small
tmpfs, when this process may mount one), kill -9 of the supervisor or of mpirun, a second supervisor
on the same output directory. The trainer's own fault hooks (ZAYA_FAULT_*) are never used; its one
handshake, ZAYA_PAUSE_AT / ZAYA_PAUSE_FILE, holds every rank at the target step (its heartbeat
ticking) while the fault goes in, so a loaded machine cannot let the run finish first.

Per trial: detected (the supervisor or trainer noticed: incident, restart or refusal), recovered (the
run finished), bit-exact (final checkpoint identical to an uninterrupted run with the same seed),
steps lost (steps the restarted job redid), detect and recover seconds (from the injection). Prints a
markdown summary and writes OUT/summary.{md,csv,json} and OUT/trials.{csv,jsonl}. Exit status 1 when
any trial was not detected, not recovered or not bit-exact, 2 on a usage error.

  scripts/fault_drill.py [--zaya build/zaya] [--out out/fault_drill] [--seed 1] [--trials 5]
                         [--cases kill9,sigstop,...] [--quick] [--keep] [--list]
See docs/fault-tolerance.md (Fault drill).
"""
import argparse
import csv
import ctypes
import json
import os
import random
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

STEPS = 40
SAVE_EVERY = 4
HANG_FLOOR = 2.0
FINAL = "step-%08d" % STEPS
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (ranks, in --quick, what is injected)
CASES = {
    "kill9": (1, True, "kill -9 of the trainer"),
    "sigstop": (1, True, "SIGSTOP of the trainer (hang)"),
    "sigterm": (1, True, "SIGTERM of the trainer (preemption from outside)"),
    "kill-staging": (1, True, "kill -9 as the checkpoint staging directory appears"),
    "kill-commit": (1, True, "SIGSTOP at the commit rename, then kill -9 (before `latest` is rewritten)"),
    "latest-missing": (1, True, "`latest` deleted, then kill -9"),
    "latest-older": (1, True, "`latest` names an older step, then kill -9"),
    "bitflip": (1, True, "one bit flipped in a tensor file of the newest checkpoint, then kill -9"),
    "truncate": (1, True, "a tensor file of the newest checkpoint truncated, then kill -9"),
    "manifest-digit": (1, True, "one digit of the newest manifest.json changed, then kill -9"),
    "damage-all": (1, True, "every committed checkpoint damaged, then kill -9: must stop with a diagnosis"),
    "disk-full": (1, True, "the output filesystem filled up (tmpfs), freed after the failure"),
    "kill9-sup": (1, True, "kill -9 of the supervisor; the same command rerun"),
    "sigterm-sup": (1, False, "SIGTERM of the supervisor; the same command rerun"),
    "two-sup": (1, True, "a second supervisor on the same output directory"),
    "kill9-mpirun": (2, True, "kill -9 of mpirun"),
    "kill9-rank": (2, False, "kill -9 of one rank under mpirun"),
    "sigstop-rank": (2, False, "SIGSTOP of one rank under mpirun (hang, blamed rank)"),
}
SUP = ["--backoff", "0.2", "--backoff-max", "1", "--hang-floor", str(HANG_FLOOR), "--hang-cap", "30",
       "--startup-timeout", "15", "--save-timeout", "5", "--grace", "1"]
# what a trial must show (default: detected, recovered, bit-exact)
MUST = {"damage-all": ("detected",)}
MPI = ["mpirun", "-np", "2", "--allow-run-as-root", "--oversubscribe", "-x", "OMP_WAIT_POLICY"]
TRIAL_TIMEOUT = 120.0
# where a signal case holds the trainer (the checkpoint section is entered at save steps only)
STEP_SECTIONS = ("data", "forward", "backward", "communication", "optimizer", "checkpoint")
RESTART_KINDS = ("crash", "hang", "preempted")  # the incident whose steps_lost covers the whole restart


def now():
    return time.monotonic()


# ---------------------------------------------------------------- processes and files


def proc_stat(pid):
    """(state, ppid) of a process, None when it does not exist."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def alive(pid):
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(int(d))
            if st and st[1] == pid:
                out.append(int(d))
    return out


def signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except OSError:
        return False


def read_hb(path):
    """A heartbeat record, None when absent or caught half-written."""
    try:
        with open(path) as f:
            r = json.loads(f.read().strip().rstrip("\0").strip())
    except (OSError, ValueError):
        return None
    return r if r.get("seq") == r.get("seq_end") else None


def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def step_dirs(ckpt):
    """Committed step directories, oldest first."""
    try:
        names = os.listdir(ckpt)
    except OSError:
        return []
    return sorted(n for n in names if re.fullmatch(r"step-\d{8}", n))


def same_checkpoint(a, b):
    """Every safetensors file byte-identical and the manifests equal but for the time and checksum."""
    try:
        fa = sorted(n for n in os.listdir(a) if n.endswith(".safetensors"))
        fb = sorted(n for n in os.listdir(b) if n.endswith(".safetensors"))
        if not fa or fa != fb:
            return False
        for n in fa:
            with open(os.path.join(a, n), "rb") as x, open(os.path.join(b, n), "rb") as y:
                if x.read() != y.read():
                    return False
        ma = json.load(open(os.path.join(a, "manifest.json")))
        mb = json.load(open(os.path.join(b, "manifest.json")))
    except (OSError, ValueError):
        return False
    for m in (ma, mb):
        m.pop("created_unix", None)
        m.pop("manifest_xxh3", None)
    return ma == mb


class DirWatch:
    """Names appearing in a directory (created or renamed into it): inotify through libc, else polling."""

    IN_MOVED_TO, IN_CREATE = 0x80, 0x100

    use_inotify = True

    def __init__(self, path):
        self.path, self.fd = path, -1
        try:
            if not self.use_inotify:
                raise OSError("polling requested")
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd >= 0:
                if libc.inotify_add_watch(fd, os.fsencode(path), self.IN_MOVED_TO | self.IN_CREATE) >= 0:
                    self.fd = fd
                else:
                    os.close(fd)
        except (OSError, AttributeError):
            self.fd = -1
        self.kind = "inotify" if self.fd >= 0 else "polling"

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def wait(self, pred, timeout, give_up=lambda: False):
        """The first name (present now or appearing) for which pred holds; None after timeout."""
        for n in os.listdir(self.path):
            if pred(n):
                return n
        end = now() + timeout
        while now() < end and not give_up():
            if self.fd >= 0:
                r, _, _ = select.select([self.fd], [], [], 0.05)
                if not r:
                    continue
                buf = os.read(self.fd, 65536)
                i = 0
                while i + 16 <= len(buf):
                    _, _, _, ln = struct.unpack_from("iIII", buf, i)
                    name = buf[i + 16:i + 16 + ln].rstrip(b"\0").decode(errors="replace")
                    i += 16 + ln
                    if pred(name):
                        return name
            else:
                for n in os.listdir(self.path):
                    if pred(n):
                        return n
                time.sleep(0.0005)
        return None


# ---------------------------------------------------------------- one supervisor process


LIVE = set()  # supervisors still running: killed when the drill itself is stopped


class Sup:
    """A `zaya supervise` process whose output lines are timestamped as they arrive."""

    def __init__(self, cmd, log_path, env):
        self.t0 = now()
        self.lines = []
        self.log = open(log_path, "a")
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        LIVE.add(self.p)
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()

    def _read(self):
        for raw in self.p.stdout:
            t = now()
            s = raw.decode(errors="replace")
            self.lines.append((t, s))
            self.log.write("[drill %8.3f] %s" % (t - self.t0, s))
            self.log.flush()

    def first(self, regex, after):
        for t, s in list(self.lines):
            if t >= after and re.search(regex, s):
                return t
        return None

    def text(self):
        return "".join(s for _, s in self.lines)

    def wait(self, timeout):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except OSError:
                pass
            rc = None
            self.p.wait()
        LIVE.discard(self.p)
        self.th.join(5)
        self.log.close()
        return rc


class Monitor(threading.Thread):
    """After an injection: when the old ranks are gone, the first completed step of a new trainer, and
    whether an old rank was still alive when the next attempt's heartbeat directory appeared."""

    def __init__(self, trial, old_pids):
        super().__init__(daemon=True)
        self.tr, self.old = trial, set(old_pids)
        self.gone_at = self.recovered_at = self.new_attempt_at = None
        self.old_alive_at_new = False
        self.last_old = None
        self.stop = False
        self.dirs0 = set(self._dirs())

    def _dirs(self):
        try:
            return [d for d in os.listdir(self.tr.hb_root) if d.startswith("attempt-")]
        except OSError:
            return []

    def run(self):
        while not self.stop:
            t = now()
            if self.gone_at is None and not any(alive(p) for p in self.old):
                self.gone_at = t
            for d in self._dirs():
                r = read_hb(os.path.join(self.tr.hb_root, d, "rank-00000.json"))
                if d not in self.dirs0 and self.new_attempt_at is None:
                    self.new_attempt_at = t
                    self.old_alive_at_new = any(alive(p) for p in self.old)
                if r is None:
                    continue
                if r.get("pid") in self.old:
                    self.last_old = r
                elif self.recovered_at is None and r.get("steps_done", 0) >= 1:
                    self.recovered_at = t
            time.sleep(0.01)


# ---------------------------------------------------------------- the drill


class Drill:
    def __init__(self, args):
        self.a = args
        self.zaya = os.path.abspath(args.zaya)
        self.out = os.path.abspath(args.out)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ZAYA_")}
        self.env["OMP_WAIT_POLICY"] = "passive"
        self.mounts = []

    def train_args(self):
        d = self.corpus
        return ["--config", d + "/config.json", "--run", d + "/run.json", "--eval-every", "0", "--eval-batches", "1",
                "--samples", "0", "--peak-gflops", "100", "-q", "--save-every", str(SAVE_EVERY), "--max-steps",
                str(STEPS)]

    def launch(self, ranks):
        return [self.zaya] if ranks == 1 else MPI + [self.zaya]

    def prepare(self):
        os.makedirs(self.out, exist_ok=True)
        self.unmount_stale()
        self.corpus = os.path.join(self.out, "corpus")
        if not os.path.isfile(os.path.join(self.corpus, "run.json")):
            subprocess.run(["bash", os.path.join(ROOT, "tests", "tiny_corpus.sh"), self.zaya, self.corpus], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        self.refs = {}
        for ranks in sorted({CASES[c][0] for c in self.cases}):
            ref = os.path.join(self.out, "ref%d" % ranks)
            shutil.rmtree(ref, ignore_errors=True)
            log = open(ref + ".log", "w")
            rc = subprocess.run(self.launch(ranks) + ["train"] + self.train_args() + ["-o", ref], stdout=log,
                                stderr=subprocess.STDOUT, env=self.env).returncode
            final = os.path.join(ref, "ckpt", FINAL)
            if rc != 0 or not os.path.isfile(os.path.join(final, "manifest.json")):
                raise SystemExit("fault_drill: the uninterrupted reference run (%d rank(s)) failed; see %s.log" %
                                 (ranks, ref))
            self.refs[ranks] = final

    # tmpfs for disk-full: mounted only when this process may, always unmounted
    def unmount_stale(self):
        try:
            for line in open("/proc/mounts"):
                mp = line.split()[1]
                if mp.startswith(self.out + "/"):
                    subprocess.run(["umount", "-l", mp], stderr=subprocess.DEVNULL)
        except OSError:
            pass

    def mount_tmpfs(self, path, size):
        os.makedirs(path, exist_ok=True)
        if os.geteuid() != 0 or not shutil.which("mount"):
            return "needs root to mount a small tmpfs"
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            return "mount -t tmpfs failed: " + r.stdout.decode(errors="replace").strip()[:120]
        self.mounts.append(path)
        return None

    def unmount(self, path):
        if path in self.mounts:
            if subprocess.run(["umount", path], stderr=subprocess.DEVNULL).returncode != 0:
                subprocess.run(["umount", "-l", path], stderr=subprocess.DEVNULL)
            self.mounts.remove(path)

    def cleanup(self):
        for p in list(LIVE):  # the drill was stopped: its supervisors go (their jobs die with them)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
        time.sleep(0.3 if LIVE else 0)
        for m in list(self.mounts):
            self.unmount(m)


class Trial:
    def __init__(self, drill, case, idx):
        self.d, self.case, self.idx = drill, case, idx
        self.ranks = CASES[case][0]
        self.rng = random.Random("%d:%s:%d" % (drill.a.seed, case, idx))
        self.dir = os.path.join(drill.out, "trials", "%s-%d" % (case, idx))
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.sup_dir = os.path.join(self.dir, "sup")
        self.train_dir = os.path.join(self.dir, "train")
        self.hb_root = os.path.join(self.sup_dir, "heartbeat")
        self.pids = set()
        self.r = {"case": case, "trial": idx, "ranks": self.ranks, "target": None, "injected_step": None,
                  "resumed_step": None, "steps_lost": None, "detected": False, "recovered": False,
                  "bit_exact": False, "detect_s": None, "recover_s": None, "note": "", "skipped": ""}

    @property
    def ckpt(self):
        return os.path.join(self.train_dir, "ckpt")

    def cmd(self, sup_dir=None):
        return [self.d.zaya, "supervise", "-o", sup_dir or self.sup_dir] + SUP + ["--"] + self.d.launch(self.ranks) + \
            ["train"] + self.d.train_args() + ["-o", self.train_dir]

    @property
    def pause_file(self):
        return os.path.join(self.dir, "pause")

    def start(self, name="sup", sup_dir=None, pause=None):
        """A supervised run; with PAUSE = (step, section) every rank of its first attempt waits on entering
        that section of that step until release() (the trainer's ZAYA_PAUSE_AT handshake)."""
        env = dict(self.d.env)
        if pause is not None:
            env["ZAYA_PAUSE_AT"] = "%d:%s" % pause
            env["ZAYA_PAUSE_FILE"] = self.pause_file
        return Sup(self.cmd(sup_dir), os.path.join(self.dir, name + ".log"), env)

    def pause_files(self):
        return ["%s.r%05d" % (self.pause_file, r) for r in range(self.ranks)]

    def wait_paused(self, sup, timeout=90):
        """Rank 0's heartbeat record once every rank is held at the pause (None: the run ended first)."""
        end = now() + timeout
        while now() < end and sup.p.poll() is None:
            if all(os.path.isfile(f) for f in self.pause_files()) and len(self.rank_pids()) == self.ranks:
                r = self.hb()
                if r:
                    return r
            time.sleep(0.003)
        return None

    def release(self):
        for f in self.pause_files():
            try:
                os.unlink(f)
            except OSError:
                pass

    def hb(self, attempt=1, rank=0):
        return read_hb(os.path.join(self.hb_root, "attempt-%03d" % attempt, "rank-%05d.json" % rank))

    def rank_pids(self, attempt=1):
        out = []
        for rank in range(self.ranks):
            r = self.hb(attempt, rank)
            if r:
                out.append(r["pid"])
        self.pids.update(out)
        return out

    def start_to_target(self, lo=5, section="data", step=None):
        """Starts the supervised run held at a random target step (entering SECTION; STEP: that one):
        (sup, rank 0's record) with every rank waiting for release(), or (sup, None) with a note when the
        run never got there (it has then been waited for)."""
        if step is None:
            step = self.target_step(lo)
        self.r["target"] = step
        sup = self.start(pause=(step, section))
        rec = self.wait_paused(sup)
        if rec is None:
            self.release()
            sup.wait(TRIAL_TIMEOUT)
            self.r["note"] = "the run never reached the target step"
        return sup, rec

    def target_step(self, lo=5):
        s = self.rng.randint(lo, STEPS - 4)
        self.r["target"] = s
        return s

    def resumed_after(self, wall):
        """Step of the first `resumed` event written after WALL (0 when a new trainer started fresh)."""
        ev = []
        try:
            for d in os.listdir(self.hb_root):
                ev += [e for e in read_jsonl(os.path.join(self.hb_root, d, "events-r00000.jsonl"))
                       if e.get("kind") == "resumed" and e.get("time", 0) > wall]
        except OSError:
            pass
        return min(ev, key=lambda e: e["time"])["step"] if ev else 0

    def incidents(self):
        return read_jsonl(os.path.join(self.sup_dir, "incidents.jsonl"))

    def finish(self, rc, t_inj, wall_inj, mon, detect_t, injected_step=None):
        """Fill the common columns once the supervisor (or its rerun) exited with RC."""
        mon.stop = True
        mon.join(2)
        r = self.r
        final = os.path.join(self.ckpt, FINAL)
        r["recovered"] = rc == 0 and os.path.isfile(os.path.join(final, "manifest.json"))
        r["bit_exact"] = r["recovered"] and same_checkpoint(self.d.refs[self.ranks], final)
        if detect_t is not None:
            r["detected"] = True
            r["detect_s"] = round(detect_t - t_inj, 3)
        if mon.recovered_at is not None and r["recovered"]:
            r["recover_s"] = round(mon.recovered_at - t_inj, 3)
        p = injected_step
        if mon.last_old is not None:
            p = max(p or 0, mon.last_old["step"])
        if p is not None:
            r["injected_step"] = p
            r["resumed_step"] = self.resumed_after(wall_inj)
            r["steps_lost"] = max(0, p - r["resumed_step"])
        inc = [i for i in self.incidents() if i["kind"] in RESTART_KINDS]
        r["sup_steps_lost"] = inc[0].get("steps_lost") if inc else None
        # what a recovered run must not leave behind: staging directories, latest.tmp.PID, quarantined steps
        try:
            r["leftovers"] = sorted(n for n in os.listdir(self.ckpt) if not re.fullmatch(r"step-\d{8}|latest|train\.lock", n))
        except OSError:
            r["leftovers"] = []
        if r["recovered"] and r["leftovers"]:
            r["recovered"] = False
            r["note"] += " left in the checkpoint directory: " + " ".join(r["leftovers"])

    def reap(self):
        for p in self.pids:
            if alive(p):
                signal_pid(p, signal.SIGKILL)


# ---------------------------------------------------------------- the cases


def run_signal(tr, sig, detect_re, pick_rank=False):
    """kill9, sigstop, sigterm, kill9-rank, sigstop-rank: a signal to a trainer rank held at a random
    step and section (the checkpoint section at a save step), then the ranks are let go."""
    section = tr.rng.choice(STEP_SECTIONS)
    step = SAVE_EVERY * tr.rng.randint(2, STEPS // SAVE_EVERY - 1) if section == "checkpoint" else None
    sup, rec = tr.start_to_target(section=section, step=step)  # the checkpoint section: at a save step
    if rec is None:
        return
    pids = tr.rank_pids()
    rank = tr.rng.randrange(tr.ranks) if pick_rank else 0
    mon = Monitor(tr, pids)
    mon.start()
    t_inj, wall = now(), time.time()
    signal_pid(pids[rank], sig)
    if sig == signal.SIGSTOP:
        tr.r["section"] = section
    tr.release()
    rc = sup.wait(TRIAL_TIMEOUT)
    tr.finish(rc, t_inj, wall, mon, sup.first(detect_re, t_inj), rec["step"])
    if sig == signal.SIGSTOP:
        hang = [i for i in tr.incidents() if i["kind"] == "hang"]
        blamed = hang[0]["rank"] if hang else None
        tr.r["note"] = "stopped in '%s'" % tr.r["section"]
        if tr.ranks > 1:
            tr.r["note"] += ", blamed rank %s (stopped %d)" % (blamed, rank)
            tr.r["detected"] = tr.r["detected"] and blamed == rank
    if sig == signal.SIGTERM:
        tr.r["note"] = "steps lost must be 0"
        tr.r["recovered"] = tr.r["recovered"] and tr.r["steps_lost"] == 0


def run_commit(tr, staging):
    """kill-staging: kill -9 when step-K.tmp-PID appears; kill-commit: SIGSTOP when step-K is renamed
    into place (or latest.tmp.PID appears), then kill -9."""
    k = SAVE_EVERY * tr.rng.randint(3, STEPS // SAVE_EVERY - 1)  # 12..36
    name = "step-%08d" % k
    # held as it enters the save of step K: the watch is set before the staging directory can appear
    sup, rec = tr.start_to_target(section="checkpoint", step=k)
    if rec is None:
        return
    if not os.path.isdir(tr.ckpt):
        tr.release()
        sup.wait(TRIAL_TIMEOUT)
        tr.r["note"] = "no checkpoint directory at step %d" % k
        return
    w = DirWatch(tr.ckpt)
    tr.release()
    if staging:
        pred = lambda n: n.startswith(name + ".tmp-")
    else:
        pred = lambda n: n == name or (n.startswith("latest.tmp.") and os.path.isdir(os.path.join(tr.ckpt, name)))
    hit = w.wait(pred, 60, give_up=lambda: sup.p.poll() is not None)
    pids = tr.rank_pids()
    if hit is None or not pids:
        w.close()
        sup.wait(TRIAL_TIMEOUT)
        tr.r["note"] = "missed step %d" % k
        return
    t_inj, wall = now(), time.time()
    if staging:
        signal_pid(pids[0], signal.SIGKILL)
    else:
        signal_pid(pids[0], signal.SIGSTOP)
    w.close()
    mon = Monitor(tr, pids)
    time.sleep(0.02)  # the kill lands; the stopped trainer stays where it is
    committed = os.path.isdir(os.path.join(tr.ckpt, name))
    try:
        latest = open(os.path.join(tr.ckpt, "latest")).read().strip()
    except OSError:
        latest = ""
    rec = tr.hb()
    if not staging:
        signal_pid(pids[0], signal.SIGKILL)
    mon.start()
    rc = sup.wait(TRIAL_TIMEOUT)
    tr.finish(rc, t_inj, wall, mon, sup.first(r"crash detected", t_inj), rec and rec["step"])
    if staging:
        tr.r["note"] = "in staging" if not committed else "after the rename"
        tr.r["window"] = not committed
    else:
        window = committed and latest != name
        tr.r["window"] = window
        tr.r["note"] = "between rename and latest (latest %s)" % latest if window else "latest already %s" % latest
        if window:  # the pointer behind the newest step must be repaired, nothing lost beyond the step in flight
            tr.r["detected"] = tr.r["detected"] and sup.first(r"pointer repaired", t_inj) is not None
            tr.r["recovered"] = tr.r["recovered"] and tr.r["resumed_step"] == k


def damage(tr, case, newest):
    """Damages the newest checkpoint NEWEST (the trainer is stopped); returns a note."""
    rng, d = tr.rng, os.path.join(tr.ckpt, newest)
    if case == "latest-missing":
        os.unlink(os.path.join(tr.ckpt, "latest"))
        return "latest removed (newest %s)" % newest
    if case == "latest-older":
        older = [s for s in step_dirs(tr.ckpt) if s < newest]
        s = rng.choice(older) if older else "step-00000000"  # none committed yet: latest names a missing step
        with open(os.path.join(tr.ckpt, "latest"), "w") as f:
            f.write(s + "\n")
        return "latest -> %s (newest %s)" % (s, newest)
    if case == "manifest-digit":
        p = os.path.join(d, "manifest.json")
        t = open(p).read()
        digits = [i for i, c in enumerate(t) if c.isdigit()]
        i = rng.choice(digits)
        new = str((int(t[i]) + rng.randint(1, 9)) % 10)
        key = re.findall(r'"([A-Za-z_0-9]+)"\s*:', t[:i])
        with open(p, "w") as f:
            f.write(t[:i] + new + t[i + 1:])
        return "digit %d of %d (after key '%s')" % (digits.index(i), len(digits), key[-1] if key else "?")
    files = sorted(n for n in os.listdir(d) if n.endswith(".safetensors"))
    fn = rng.choice(files)
    p = os.path.join(d, fn)
    size = os.path.getsize(p)
    with open(p, "rb") as f:
        hlen = 8 + struct.unpack("<Q", f.read(8))[0]
    if case == "truncate":
        n = rng.randrange(size)
        os.truncate(p, n)
        return "%s %d -> %d bytes" % (fn, size, n)
    # a quarter of the flips go into the header (length, JSON: names, dtypes, shapes, offsets, padding)
    off = rng.randrange(hlen) if case == "bitflip" and rng.random() < 0.25 else rng.randrange(hlen, size)
    bit = rng.randrange(8)
    with open(p, "r+b") as f:
        f.seek(off)
        old = f.read(1)[0]
        f.seek(off)
        f.write(bytes([old ^ (1 << bit)]))
    # the reader accepts NUL as header padding, like a space: that flip changes no value
    tr.r["harmless"] = off < hlen and old == 0x20 and old ^ (1 << bit) == 0
    return "%s byte %d bit %d (%s%s)" % (fn, off, bit, "header" if off < hlen else "data",
                                       ", padding space -> NUL" if tr.r["harmless"] else "")


def run_damage(tr):
    """latest-missing, latest-older, bitflip, truncate, manifest-digit: SIGSTOP at a random step, damage
    the newest committed checkpoint, kill -9; the restart must notice and fall back or repair."""
    sup, rec = tr.start_to_target(lo=5 if tr.case in ("damage-all", "latest-missing") else 10)
    if rec is None:
        return
    # a fallback needs an intact older step: wait for a second commit (an async save may be in flight)
    end = now() + 30
    while len(step_dirs(tr.ckpt)) < (1 if tr.case in ("latest-missing", "damage-all") else 2) and now() < end:
        time.sleep(0.003)
    pids = tr.rank_pids()
    t_inj, wall = now(), time.time()
    signal_pid(pids[0], signal.SIGSTOP)
    time.sleep(0.01)
    steps = step_dirs(tr.ckpt)
    if tr.case == "damage-all":
        tr.r["note"] = "; ".join("%s: %s" % (st, damage(tr, "bitflip-data", st)) for st in steps)
    else:
        tr.r["note"] = damage(tr, tr.case, steps[-1])
    mon = Monitor(tr, pids)
    signal_pid(pids[0], signal.SIGKILL)
    tr.release()
    mon.start()
    rc = sup.wait(TRIAL_TIMEOUT)
    if tr.case == "damage-all":
        # no intact checkpoint: the trainer must refuse (never a silent fresh start over the run's
        # progress), the supervisor stop with a diagnosis naming the damaged file, the files stay
        t = sup.first(r"error: deterministic failure(?=.*no loadable checkpoint)(?=.*%s)" % re.escape(steps[-1]), t_inj)
        kept = all(os.path.isdir(os.path.join(tr.ckpt, st)) for st in steps)
        tr.finish(rc, t_inj, wall, mon, t if rc == 1 and kept else None, rec["step"])
        tr.r["note"] += "; supervisor exit %s" % rc
        return
    want = r"pointer repaired" if tr.case.startswith("latest") else r"corrupt checkpoint at restart"
    tr.finish(rc, t_inj, wall, mon, sup.first(want, t_inj), rec["step"])


def run_diskfull(tr):
    """The training output on a small tmpfs; at a random step the rest of it is filled. The failure
    must be detected (a crash whose log names the full disk); the space is then freed and the
    supervisor's restart must complete bit-exact."""
    mnt = os.path.join(tr.dir, "mnt")
    why = tr.d.mount_tmpfs(mnt, "24m")
    if why:
        tr.r["skipped"] = why
        return
    try:
        tr.train_dir = os.path.join(mnt, "train")
        sup, rec = tr.start_to_target()
        if rec is None:
            return
        pids = tr.rank_pids()
        mon = Monitor(tr, pids)
        mon.start()
        t_inj, wall = now(), time.time()
        filler = os.path.join(mnt, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        for chunk in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError:
                pass
        os.close(fd)
        tr.release()  # the trainer goes on into the full disk
        end = now() + 30
        t_det = None
        while now() < end and sup.p.poll() is None and t_det is None:
            t_det = sup.first(r"crash detected", t_inj)
            time.sleep(0.01)
        os.unlink(filler)
        rc = sup.wait(TRIAL_TIMEOUT)
        tr.finish(rc, t_inj, wall, mon, t_det, rec["step"])
        m = re.search(r"(?:crash detected[^\n]*?)(No space left[^\n;]*|disk full[^\n;]*)", sup.text())
        tr.r["note"] = ("named: %s" % m.group(1)[:60]) if m else "the failure did not name the full disk"
        if t_det is not None and not m:
            tr.r["detected"] = False
    finally:
        tr.reap()
        time.sleep(0.1)
        tr.d.unmount(mnt)


def run_sup_signal(tr, sig):
    """kill9-sup, sigterm-sup: a signal to the supervisor itself; its ranks must end with it (kill -9:
    within 2 s; SIGTERM: after a checkpoint, exit 75), and the same command rerun must complete."""
    sup, rec = tr.start_to_target()
    if rec is None:
        return
    pids = tr.rank_pids()
    mon = Monitor(tr, pids)
    mon.start()
    t_inj, wall = now(), time.time()
    signal_pid(sup.p.pid, sig)
    if sig == signal.SIGTERM:  # the job holds the request once the supervisor says so: then let it go
        end = now() + 30
        while sup.first(r"asked the job to checkpoint", t_inj) is None and sup.p.poll() is None and now() < end:
            time.sleep(0.005)
    tr.release()
    rc1 = sup.wait(TRIAL_TIMEOUT)
    end = now() + 10
    while mon.gone_at is None and now() < end:
        time.sleep(0.01)
    if sig == signal.SIGKILL:
        det = mon.gone_at if mon.gone_at is not None and mon.gone_at - t_inj <= 2.0 else None
        tr.r["note"] = "ranks gone %.2f s after the kill" % (mon.gone_at - t_inj) if mon.gone_at else "ranks left running"
    else:
        det = now() if rc1 == 75 and mon.gone_at is not None else None
        tr.r["note"] = "supervisor exit %s" % rc1
    last = mon.last_old
    mon.dirs0 = set(mon._dirs())
    rerun = tr.start("rerun")
    rc = rerun.wait(TRIAL_TIMEOUT)
    mon.last_old = last
    tr.finish(rc, t_inj, wall, mon, det, rec["step"])
    if sig == signal.SIGTERM:
        tr.r["recovered"] = tr.r["recovered"] and tr.r["steps_lost"] == 0


def run_two_sup(tr):
    """A second supervisor with the same -o while the first runs: refused at once naming the holder's
    pid; the first run completes with no incident, bit-exact."""
    sup, rec = tr.start_to_target()
    if rec is None:
        return
    mon = Monitor(tr, tr.rank_pids())
    mon.start()
    t_inj, wall = now(), time.time()
    second = tr.start("second")
    rc2 = second.wait(30)
    t_det = now()
    tr.release()
    named = re.search(r"in use by pid %d\b" % sup.p.pid, second.text()) is not None
    rc = sup.wait(TRIAL_TIMEOUT)
    mon.last_old = None
    tr.finish(rc, t_inj, wall, mon, t_det if rc2 == 1 and named else None, rec["step"])
    tr.r["resumed_step"], tr.r["steps_lost"] = None, 0
    tr.r["recover_s"] = None
    inc = tr.incidents()
    tr.r["note"] = "second exit %s, %s the holder pid; %d incident(s) in the first" % (
        rc2, "naming" if named else "NOT naming", len(inc))
    tr.r["recovered"] = tr.r["recovered"] and not inc


def run_kill_mpirun(tr):
    """kill -9 of mpirun (2 ranks): no rank of the attempt may be alive when the next one starts."""
    sup, rec = tr.start_to_target()
    if rec is None:
        return
    pids = tr.rank_pids()
    mpirun = [c for c in children(sup.p.pid) if "mpirun" in open("/proc/%d/cmdline" % c).read()]
    if not mpirun:
        tr.release()
        sup.wait(TRIAL_TIMEOUT)
        tr.r["note"] = "no mpirun child found"
        return
    mon = Monitor(tr, pids)
    mon.start()
    t_inj, wall = now(), time.time()
    signal_pid(mpirun[0], signal.SIGKILL)
    tr.release()
    rc = sup.wait(TRIAL_TIMEOUT)
    tr.finish(rc, t_inj, wall, mon, sup.first(r"crash detected", t_inj), rec["step"])
    tr.r["note"] = "old rank alive at the next attempt" if mon.old_alive_at_new else "old ranks gone before the next attempt"
    tr.r["detected"] = tr.r["detected"] and not mon.old_alive_at_new


RUNNERS = {
    "kill9": lambda tr: run_signal(tr, signal.SIGKILL, r"crash detected"),
    "kill9-rank": lambda tr: run_signal(tr, signal.SIGKILL, r"crash detected", pick_rank=True),
    "sigstop": lambda tr: run_signal(tr, signal.SIGSTOP, r"hang detected"),
    "sigstop-rank": lambda tr: run_signal(tr, signal.SIGSTOP, r"hang detected", pick_rank=True),
    "sigterm": lambda tr: run_signal(tr, signal.SIGTERM, r"preempted from outside"),
    "kill-staging": lambda tr: run_commit(tr, True),
    "kill-commit": lambda tr: run_commit(tr, False),
    "latest-missing": run_damage,
    "latest-older": run_damage,
    "bitflip": run_damage,
    "truncate": run_damage,
    "manifest-digit": run_damage,
    "damage-all": run_damage,
    "disk-full": run_diskfull,
    "kill9-sup": lambda tr: run_sup_signal(tr, signal.SIGKILL),
    "sigterm-sup": lambda tr: run_sup_signal(tr, signal.SIGTERM),
    "two-sup": run_two_sup,
    "kill9-mpirun": run_kill_mpirun,
}


def run_trial(drill, case, idx):
    tr = Trial(drill, case, idx)
    t0 = now()
    try:
        RUNNERS[case](tr)
    except Exception as e:  # a drill error is a failed trial, not the end of the drill
        tr.r["note"] += " drill error: %s: %s" % (type(e).__name__, e)
    finally:
        tr.reap()
    r = tr.r
    r["wall_s"] = round(now() - t0, 2)
    must = MUST.get(case, ("detected", "recovered", "bit_exact"))
    if r.get("harmless"):
        must = tuple(m for m in must if m != "detected")
    r["ok"] = bool(r["skipped"]) or all(r[m] for m in must)
    if r["ok"] and not drill.a.keep:
        shutil.rmtree(tr.dir, ignore_errors=True)
    return r


# ---------------------------------------------------------------- report


def mean(v):
    v = [x for x in v if x is not None]
    return round(sum(v) / len(v), 2) if v else None


def summarize(rows):
    out = []
    for case in dict.fromkeys(r["case"] for r in rows):
        rs = [r for r in rows if r["case"] == case]
        run = [r for r in rs if not r["skipped"]]
        notes = ""
        if case in ("kill-staging", "kill-commit"):
            notes = "%s %d/%d" % ("in staging" if case == "kill-staging" else "in the rename-latest window",
                                  sum(1 for r in run if r.get("window")), len(run))
        elif case in ("sigstop", "sigstop-rank"):
            notes = "in the checkpoint section %d/%d (timeout --save-timeout 5 s)" % (
                sum(1 for r in run if r.get("section") == "checkpoint"), len(run))
        elif case == "damage-all":
            notes = "must stop with a diagnosis: no intact checkpoint"
        elif case == "bitflip":
            notes = "in a header %d/%d" % (sum(1 for r in run if "(header)" in r["note"]), len(run))
        elif rs[0]["skipped"]:
            notes = "skipped: " + rs[0]["skipped"]
        differ = [r for r in run if r.get("sup_steps_lost") is not None and r["steps_lost"] is not None
                  and r["sup_steps_lost"] != r["steps_lost"]]
        if differ:
            notes += "%ssupervisor's steps_lost differs in %d/%d" % ("; " if notes else "", len(differ), len(run))
        out.append({"case": case, "ranks": CASES[case][0], "fault": CASES[case][2], "trials": len(run),
                    "detected": sum(r["detected"] for r in run), "recovered": sum(r["recovered"] for r in run),
                    "bit_exact": sum(r["bit_exact"] for r in run),
                    "mean_steps_lost": mean([r["steps_lost"] for r in run]),
                    "mean_detect_s": mean([r["detect_s"] for r in run]),
                    "mean_recover_s": mean([r["recover_s"] for r in run]), "notes": notes,
                    "failed": sum(1 for r in run if not r["ok"])})
    return out


def fmt(v):
    return "-" if v is None else str(v)


def markdown(summary):
    h = "| case | ranks | trials | detected | recovered | bit-exact | steps lost | detect s | recover s | notes |"
    lines = [h, "|" + "---|" * 10]
    for s in summary:
        lines.append("| %s | %d | %d | %d | %d | %d | %s | %s | %s | %s |" % (
            s["case"], s["ranks"], s["trials"], s["detected"], s["recovered"], s["bit_exact"],
            fmt(s["mean_steps_lost"]), fmt(s["mean_detect_s"]), fmt(s["mean_recover_s"]), s["notes"]))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zaya", default=os.path.join(ROOT, "build", "zaya"))
    ap.add_argument("--out", default="out/fault_drill")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--trials", type=int, default=5, help="trials per case (default 5)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--quick", action="store_true", help="one trial of each fast case (the ctest)")
    ap.add_argument("--keep", action="store_true", help="keep the directories of passing trials")
    ap.add_argument("--poll", action="store_true", help="time the commit cases by polling, not inotify")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    a = ap.parse_args()
    if a.list:
        for c, (n, q, what) in CASES.items():
            print("%-15s %d rank%s %s  %s" % (c, n, "s" if n > 1 else " ", "quick" if q else "     ", what))
        return 0
    cases = [c for c in a.cases.split(",") if c] if a.cases else [c for c in CASES if CASES[c][1] or not a.quick]
    bad = [c for c in cases if c not in CASES]
    if bad or a.trials < 1:
        ap.error("unknown case %s (see --list)" % ", ".join(bad) if bad else "--trials must be >= 1")
    if a.quick:
        a.trials = 1
    if not os.access(a.zaya, os.X_OK):
        print("fault_drill: error: no zaya executable at '%s' (--zaya)" % a.zaya, file=sys.stderr)
        return 2
    if any(CASES[c][0] > 1 for c in cases) and not shutil.which("mpirun"):
        print("fault_drill: error: mpirun not found (needed by %s)" % ",".join(c for c in cases if CASES[c][0] > 1),
              file=sys.stderr)
        return 2
    DirWatch.use_inotify = not a.poll
    d = Drill(a)
    d.cases = cases
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))
    t0 = now()
    rows = []
    try:
        d.prepare()
        watch = DirWatch(d.out)
        print("fault drill: %d case(s) x %d trial(s), seed %d, %d steps, checkpoint every %d, hang floor %g s, "
              "commit timing by %s; output in %s" % (len(cases), a.trials, a.seed, STEPS, SAVE_EVERY, HANG_FLOOR,
                                                   watch.kind, d.out), flush=True)
        watch.close()
        for case in cases:
            for i in range(a.trials):
                r = run_trial(d, case, i)
                rows.append(r)
                print("  %-15s #%d %-4s detected=%d recovered=%d bit-exact=%d step %s->%s lost %s (supervisor: %s) "
                      "detect %s s recover %s s [%.1f s] %s" % (
                          case, i, "skip" if r["skipped"] else "ok" if r["ok"] else "FAIL", r["detected"],
                          r["recovered"], r["bit_exact"], fmt(r["injected_step"]), fmt(r["resumed_step"]),
                          fmt(r["steps_lost"]), fmt(r.get("sup_steps_lost")), fmt(r["detect_s"]), fmt(r["recover_s"]),
                          r["wall_s"], r["skipped"] or r["note"]), flush=True)
    finally:
        d.cleanup()
    summary = summarize(rows)
    md = markdown(summary)
    wall = now() - t0
    print()
    print(md, end="")
    print("\n%d trials in %.0f s (seed %d)" % (len(rows), wall, a.seed))
    with open(os.path.join(d.out, "summary.md"), "w") as f:
        f.write(md)
    cols = ["case", "ranks", "fault", "trials", "detected", "recovered", "bit_exact", "mean_steps_lost",
            "mean_detect_s", "mean_recover_s", "notes", "failed"]
    with open(os.path.join(d.out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(summary)
    with open(os.path.join(d.out, "summary.json"), "w") as f:
        json.dump({"seed": a.seed, "trials_per_case": a.trials, "steps": STEPS, "wall_s": round(wall, 1),
                   "cases": summary}, f, indent=1)
    tcols = ["case", "trial", "ranks", "target", "injected_step", "resumed_step", "steps_lost", "detected",
             "recovered", "bit_exact", "detect_s", "recover_s", "sup_steps_lost", "wall_s", "ok", "skipped", "note"]
    with open(os.path.join(d.out, "trials.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=tcols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(d.out, "trials.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    failed = [r for r in rows if not r["ok"]]
    for r in failed:
        print("FAIL: %s #%d: detected=%d recovered=%d bit-exact=%d (%s); kept in %s" % (
            r["case"], r["trial"], r["detected"], r["recovered"], r["bit_exact"], r["note"],
            os.path.join(d.out, "trials", "%s-%d" % (r["case"], r["trial"]))))
    print("fault_drill: %d of %d trials failed" % (len(failed), len(rows)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
