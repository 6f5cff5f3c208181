#!/usr/bin/env python3
"""record.py: writes tests/traces/{dev,test}/*.jsonl, the loop detector's corpus.

Each trace is one agent session: a scripted sequence of tool calls whose
results are real. Files are read from a copy of a real source tree (Python's
standard library), searches are real grep runs, builds are real C compiler
runs on small programs, queries run in a real SQLite database, the debugger
is gdb stepping a real program. Only the services that cannot run here (a CI
job, an issue tracker, a browser, a knowledge base, a cluster) are simulated,
as state machines that answer the way such services do.

The labels come from the script, never from the detector: a call is "loop"
when the session repeats something that cannot give new information (the
same file unchanged, the same failing command with nothing changed, the same
question reworded to the same answer, two calls bounced between with nothing
changing); the first call of each pattern is "work". A repeated call whose
answer changes (a job's progress, a file edited since, the next page) is work.
Where a careful reviewer would call repetition reasonable (polling a job that
is still running, with waits between polls), it is labelled work even when the
answer is the same: the detector must earn that.

Every variant of every scenario is recorded three times with different seeds
(sizes and choices vary): one recording goes to dev, one to test, the third to
either (seeded), so each kind of session is in both splits. Run: python3 tests/traces/record.py  (needs cc, grep, gdb, sqlite3).
"""
import datetime as dt
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STDLIB = os.path.dirname(os.__file__)
MAXTEXT = 1800


def clip(s, n=MAXTEXT):
    return s if len(s) <= n else s[:n] + "\n... (%d more bytes)" % (len(s) - n)


def text(s, err=False, structured=None):
    r = {"content": [{"type": "text", "text": clip(s)}]}
    if structured is not None:
        r["structuredContent"] = structured
    if err:
        r["isError"] = True
    return r


class Trace:
    def __init__(self, name, seed):
        self.name, self.rng = name, random.Random(seed)
        self.t = dt.datetime(2026, 9, 1, 9, 0, 0) + dt.timedelta(days=self.rng.randrange(60),
                                                                 minutes=self.rng.randrange(600))
        self.lines, self.episodes, self.meta_every = [], 0, self.rng.choice([0, 0, 3, 5])
        self.words = list(WORDS)
        self.rng.shuffle(self.words)

    def word(self):
        """A search term not used before in this session (a repeated search is a repeat)."""
        return self.words.pop()

    def episode(self):
        self.episodes += 1
        return "e%d" % self.episodes

    def call(self, tool, args, result=None, error=None, label="work", episode=None, kind=None, gap=None):
        self.t += dt.timedelta(seconds=gap if gap is not None else self.rng.uniform(2, 28))
        a = dict(args)
        if self.meta_every and len(self.lines) % self.meta_every == 1:
            a["_meta"] = {"progressToken": len(self.lines) + 1}
        keys = list(a.keys())
        if self.rng.random() < 0.3:
            self.rng.shuffle(keys)                # clients send keys in any order
        line = {"at": self.t.strftime("%Y-%m-%dT%H:%M:%SZ"), "tool": tool, "arguments": {k: a[k] for k in keys}}
        if error is not None:
            line["error"] = error
        else:
            line["result"] = result
        line["label"] = label
        if label == "loop":
            line["episode"], line["kind"] = episode, kind
        self.lines.append(line)

    def wait(self, seconds):
        self.t += dt.timedelta(seconds=seconds)


# --- real tools --------------------------------------------------------------

class Repo:
    """A copy of a real source tree the agent explores and edits."""

    def __init__(self, rng, pkgs):
        self.dir = tempfile.mkdtemp(prefix="keel-trace-")
        for p in pkgs:
            src = os.path.join(STDLIB, p)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(self.dir, p), ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(src, self.dir)
        self.rng = rng

    def files(self):
        out = []
        for root, _, fs in os.walk(self.dir):
            for f in fs:
                out.append(os.path.relpath(os.path.join(root, f), self.dir))
        return sorted(out)

    def dirs(self):
        out = ["."]
        for root, ds, _ in os.walk(self.dir):
            for d in ds:
                out.append(os.path.relpath(os.path.join(root, d), self.dir))
        return sorted(out)

    def read(self, path, offset=None, limit=None):
        try:
            with open(os.path.join(self.dir, path), encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
        except OSError as e:
            return text("Error: ENOENT: no such file or directory, open '%s'" % path, err=True), False
        if offset is not None:
            lines = lines[offset:offset + (limit or 60)]
        return text("\n".join(lines)), True

    def write(self, path, content):
        full = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(content)
        return text("Successfully wrote to %s" % path)

    def ls(self, path):
        full = os.path.join(self.dir, path)
        if not os.path.isdir(full):
            return text("Error: ENOENT: no such file or directory, scandir '%s'" % path, err=True)
        rows = []
        for e in sorted(os.listdir(full)):
            if e == "__pycache__":
                continue
            rows.append(("[DIR] " if os.path.isdir(os.path.join(full, e)) else "[FILE] ") + e)
        return text("\n".join(rows))

    def grep(self, pattern, path=".", glob=None):
        cmd = ["grep", "-rnE", "--exclude-dir=__pycache__", pattern, path]
        if glob:
            cmd[1:1] = ["--include=" + glob]
        p = subprocess.run(cmd, cwd=self.dir, capture_output=True, text=True, errors="replace")
        out = p.stdout.strip()
        if not out:
            return text("No matches found"), 0
        hits = out.split("\n")
        return text("\n".join(hits[:25]) + ("\n[%d more matches]" % (len(hits) - 25) if len(hits) > 25 else "")), len(hits)

    def sh(self, cmd):
        p = subprocess.run(cmd, cwd=self.dir, shell=True, capture_output=True, text=True, errors="replace")
        out = (p.stdout + p.stderr).replace(self.dir, "/home/dev/project")
        body = "exit code: %d\n%s" % (p.returncode, out.strip())
        return text(body, err=p.returncode != 0), p.returncode

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


WORDS = ("parse header decode encode message policy charset address quote literal token cookie "
         "request response status reason chunk buffer stream close flush format value name key "
         "line default error check handle get set read write open send join split item field").split()


# --- scenarios ---------------------------------------------------------------

def explore(tr, variant):
    """Exploring a repository: list, read many files, search. variant: none | reread | bounce."""
    rng = tr.rng
    repo = Repo(rng, rng.choice([["email", "http", "json"], ["json", "http", "urllib", "xml"], ["email", "wsgiref", "json"],
                                 ["logging", "json", "importlib", "http"], ["concurrent", "asyncio"]]))
    try:
        files = [f for f in repo.files() if f.endswith(".py")]
        rng.shuffle(files)
        reads = files[:min(len(files) - 2, rng.randint(18, 32))]
        for d in repo.dirs()[:rng.randint(2, 5)]:
            tr.call("list_directory", {"path": d}, repo.ls(d))
        loop_at = rng.randint(6, len(reads) - 6) if variant != "none" else -1
        for i, f in enumerate(reads):
            r, _ = repo.read(f)
            tr.call("read_file", {"path": f}, r)
            if rng.random() < 0.35:
                w = tr.word()
                tr.call("search_files", {"pattern": "def .*%s" % w, "path": "."}, repo.grep("def .*%s" % w)[0])
            if i == loop_at and variant == "reread":
                # the agent keeps coming back to a file it has read, which nothing has changed
                ep, target = tr.episode(), reads[rng.randint(max(0, i - 4), i)]
                r, _ = repo.read(target)
                for k in range(rng.randint(3, 7)):
                    if rng.random() < 0.4:
                        w = tr.word()
                        tr.call("search_files", {"pattern": w + "\\(", "path": "."}, repo.grep(w + "\\(")[0])
                    tr.call("read_file", {"path": target}, r, label="loop", episode=ep, kind="repeat")
            if i == loop_at and variant == "bounce":
                # two files not read before, then back and forth between them
                ep, a, b = tr.episode(), files[len(reads)], files[len(reads) + 1]
                ra, _ = repo.read(a)
                rb, _ = repo.read(b)
                tr.call("read_file", {"path": a}, ra)
                tr.call("read_file", {"path": b}, rb)
                for k in range(rng.randint(3, 5)):
                    tr.call("read_file", {"path": a}, ra, label="loop", episode=ep, kind="alternation", gap=rng.uniform(3, 9))
                    tr.call("read_file", {"path": b}, rb, label="loop", episode=ep, kind="alternation", gap=rng.uniform(3, 9))
    finally:
        repo.close()


C_BUGGY = r'''#include <stdio.h>
#include <string.h>

struct item { const char *name; int qty; };

static int total(const struct item *v, int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i].qty
    return sum;
}

static const char *find(const struct item *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return v[i].nme;
    return NULL;
}

int main(void)
{
    struct item v[] = {{"apple", 3}, {"pear", 5}, {"plum", 7}};
    printf("%d %s\n", total(v, 3), find(v, 3, "pear"));
    return total(v, 3) == TOTAL ? 0 : 1;
}
'''

TEST_SH = r'''#!/bin/sh
# runs the program and checks its output
out=$(./inv) || { echo "FAIL: exit status $?"; echo "got: $out"; exit 1; }
[ "$out" = "15 pear" ] || { echo "FAIL: expected '15 pear', got '$out'"; exit 1; }
echo "PASS: 1 test"
'''


def build_test(tr, variant):
    """Edit, build, test with real compiler output. variant: none | rerun | same_error."""
    rng = tr.rng
    repo = Repo(rng, [])
    try:
        src = C_BUGGY
        tr.call("write_file", {"path": "inv.c", "content": src}, repo.write("inv.c", src))
        repo.write("test.sh", TEST_SH)
        os.chmod(os.path.join(repo.dir, "test.sh"), 0o755)
        tr.call("read_file", {"path": "test.sh"}, repo.read("test.sh")[0])
        build = "cc -Wall -o inv inv.c"
        fixes = [("sum += v[i].qty\n", "sum += v[i].qty;\n"), ("v[i].nme", "v[i].name"),
                 ("== TOTAL ?", "== 16 ?"), ("== 16 ?", "== 15 ?")]
        if variant == "same_error":
            fixes = fixes[:1]
        step = 0
        for old, new in fixes:
            r, rc = repo.sh(build)
            tr.call("run_command", {"command": build}, r)
            if rc == 0:
                r, rc = repo.sh("./test.sh")
                tr.call("run_command", {"command": "./test.sh"}, r)
            if variant == "rerun" and step == 3:
                # the test fails; the agent runs it again and again, changing nothing
                ep = tr.episode()
                r, _ = repo.sh("./test.sh")
                for k in range(rng.randint(4, 7)):
                    tr.call("run_command", {"command": "./test.sh"}, r, label="loop", episode=ep, kind="repeat",
                            gap=rng.uniform(5, 20))
            tr.call("read_file", {"path": "inv.c"}, repo.read("inv.c")[0])
            src = src.replace(old, new, 1)
            tr.call("edit_file", {"path": "inv.c", "edits": [{"oldText": old.strip(), "newText": new.strip()}]},
                    repo.write("inv.c", src))
            step += 1
        if variant == "same_error":
            # struct member misspelled: every flag the agent tries hits the same first error
            ep = tr.episode()
            flags = ["-std=c11", "-O2", "-std=gnu99 -Wextra", "-g -O0", "-Wno-error", "-std=c17 -pedantic", "-fsyntax-only"]
            rng.shuffle(flags)
            first = True
            for f in flags[:rng.randint(4, 7)]:
                r, _ = repo.sh("cc %s -o inv inv.c" % f)
                if first:
                    tr.call("run_command", {"command": "cc %s -o inv inv.c" % f}, r)
                    first = False
                else:
                    tr.call("run_command", {"command": "cc %s -o inv inv.c" % f}, r, label="loop", episode=ep,
                            kind="same_error")
            src = src.replace("v[i].nme", "v[i].name").replace("== TOTAL ?", "== 15 ?")
            tr.call("write_file", {"path": "inv.c", "content": src}, repo.write("inv.c", src))
        r, rc = repo.sh(build)
        tr.call("run_command", {"command": build}, r)
        r, rc = repo.sh("./test.sh")
        tr.call("run_command", {"command": "./test.sh"}, r)
        for extra in ["git init -q && git add -A && git status --short", "wc -l inv.c", "ls -la"]:
            r, _ = repo.sh(extra)
            tr.call("run_command", {"command": extra}, r)
    finally:
        repo.close()


def paging(tr, variant):
    """Paging through search hits and a long file. variant: none | reworded_empty."""
    rng = tr.rng
    repo = Repo(rng, ["email", "http", "json", "logging"])
    try:
        w = rng.choice(["return", "self\\.", "raise", "import", "if not"])
        p = subprocess.run(["grep", "-rnE", "--exclude-dir=__pycache__", w, "."], cwd=repo.dir, capture_output=True,
                           text=True)
        hits = p.stdout.strip().split("\n")
        per = rng.choice([20, 25, 30])
        pages = min(len(hits) // per, rng.randint(6, 12))
        for pg in range(pages):
            body = "\n".join(hits[pg * per:(pg + 1) * per])
            tr.call("search_code", {"query": w, "page": pg + 1, "per_page": per},
                    text("page %d of %d\n%s" % (pg + 1, len(hits) // per + 1, body)))
        big = rng.choice(["email/_header_value_parser.py", "http/client.py", "logging/__init__.py"])
        total = len(open(os.path.join(repo.dir, big), encoding="utf-8").read().split("\n"))
        off = 0
        for k in range(rng.randint(8, 14)):
            tr.call("read_file", {"path": big, "offset": off, "limit": 80}, repo.read(big, off, 80)[0])
            off += 80
            if off > total:
                break
        if variant == "reworded_empty":
            ep = tr.episode()
            asks = ["retry backoff jitter", "exponential backoff retry", "backoff with jitter for retries",
                    "retry policy backoff", "jittered retry delay", "how are retries delayed"]
            rng.shuffle(asks)
            for i, q in enumerate(asks[:rng.randint(4, 6)]):
                tr.call("search_code", {"query": q, "page": 1, "per_page": per}, text("No results found for the query."),
                        label="work" if i == 0 else "loop", episode=ep, kind="reasked")
        for k in range(rng.randint(3, 6)):
            w2 = tr.word()
            r, n = repo.grep("def %s" % w2)
            tr.call("search_code", {"query": "def %s" % w2, "page": 1, "per_page": per}, r)
    finally:
        repo.close()


def polling(tr, variant):
    """Polling a CI run. variant: progress | same_status | failed."""
    rng = tr.rng
    run = rng.randint(4000000, 9000000)
    steps = ["checkout", "setup toolchain", "install dependencies", "build", "unit tests", "integration tests", "package"]
    tr.call("trigger_workflow", {"workflow": "ci.yml", "ref": "main"},
            text(json.dumps({"run_id": run, "status": "queued", "html_url": "https://ci.example.com/runs/%d" % run})))
    elapsed = 0
    if variant == "progress":
        for i, s in enumerate(steps):
            for k in range(rng.randint(1, 3)):
                wait = rng.randint(20, 90)
                tr.wait(wait)
                elapsed += wait
                tr.call("get_workflow_run", {"run_id": run},
                        text(json.dumps({"run_id": run, "status": "in_progress", "current_step": s,
                                         "steps_done": i, "steps_total": len(steps), "elapsed_s": elapsed})))
        tr.call("get_workflow_run", {"run_id": run},
                text(json.dumps({"run_id": run, "status": "completed", "conclusion": "success", "elapsed_s": elapsed + 30})))
    elif variant == "same_status":
        # a CI API that says nothing but "in_progress" until it is done; the agent waits between polls
        for k in range(rng.randint(6, 11)):
            tr.wait(rng.randint(45, 120))
            tr.call("get_workflow_run", {"run_id": run}, text(json.dumps({"run_id": run, "status": "in_progress"})))
        tr.wait(60)
        tr.call("get_workflow_run", {"run_id": run},
                text(json.dumps({"run_id": run, "status": "completed", "conclusion": "success"})))
    else:
        for i, s in enumerate(steps[:4]):
            tr.wait(rng.randint(30, 80))
            tr.call("get_workflow_run", {"run_id": run},
                    text(json.dumps({"run_id": run, "status": "in_progress", "current_step": s, "steps_done": i})))
        failed = {"run_id": run, "status": "completed", "conclusion": "failure", "failed_step": "unit tests"}
        log = ("FAILED tests/test_orders.py::test_refund_rounding - AssertionError: assert 10.01 == 10.0\n"
               "1 failed, 212 passed in 48.31s")
        ep = tr.episode()
        tr.call("get_workflow_run", {"run_id": run}, text(json.dumps(failed)))
        tr.call("get_job_logs", {"run_id": run, "job": "unit tests"}, text(log))
        for k in range(rng.randint(3, 5)):
            tr.call("get_workflow_run", {"run_id": run}, text(json.dumps(failed)), label="loop", episode=ep,
                    kind="alternation")
            tr.call("get_job_logs", {"run_id": run, "job": "unit tests"}, text(log), label="loop", episode=ep,
                    kind="alternation")
    for k in range(rng.randint(2, 4)):
        tr.call("list_workflow_runs", {"workflow": "ci.yml", "per_page": 5, "page": k + 1},
                text("\n".join("%d %s" % (run - 17 * (j + 5 * k + 1), rng.choice(["success", "failure", "cancelled"]))
                               for j in range(5))))


def tracker(tr, variant):
    """Creating many tickets. variant: none | same_error."""
    rng = tr.rng
    area = rng.choice(["billing", "search", "onboarding", "mobile"])
    nxt = rng.randint(100, 900)
    titles = ["%s: %s" % (area, t) for t in [
        "empty state shows a spinner forever", "date picker ignores the locale", "export button disabled for admins",
        "error toast repeats twice", "pagination resets on refresh", "slow first load on 3G", "typo in the welcome mail",
        "keyboard focus lost after save", "avatar upload fails over 2 MB", "timezone shown in UTC",
        "filters not kept in the URL", "dark mode contrast on links", "sort by name is case-sensitive",
        "logout does not clear drafts", "retry banner hides the header", "CSV export misses the last row",
        "search highlights the wrong term", "the back button loses the scroll position"]]
    rng.shuffle(titles)
    tr.call("list_labels", {"project": area}, text("bug\nfeature\nux\nperformance\nneeds-triage"))
    n = rng.randint(10, 17)
    for i, t in enumerate(titles[:n]):
        if variant == "same_error" and i == n // 2:
            ep = tr.episode()
            msg = "422 Validation Failed: label 'regression' does not exist in project %s" % area
            for k, t2 in enumerate((titles[n:] + titles[:6])[:rng.randint(4, 6)]):
                tr.call("create_issue", {"project": area, "title": t2, "labels": ["bug", "regression"]},
                        text(msg, err=True), label="work" if k == 0 else "loop", episode=ep, kind="same_error")
            tr.call("list_labels", {"project": area}, text("bug\nfeature\nux\nperformance\nneeds-triage"))
        nxt += 1
        tr.call("create_issue", {"project": area, "title": t, "labels": ["bug"], "body": "Seen on %s." % rng.choice(
            ["Chrome 131", "Safari 18", "Firefox 133", "Android 15"])},
            text(json.dumps({"id": nxt, "key": "%s-%d" % (area[:3].upper(), nxt), "title": t, "state": "open"})))
        if rng.random() < 0.3:
            tr.call("add_comment", {"issue": nxt, "body": "Repro steps attached."},
                    text(json.dumps({"id": rng.randint(10 ** 6, 10 ** 7), "issue": nxt})))
    tr.call("list_issues", {"project": area, "state": "open", "per_page": 50},
            text("%d open issues" % (n + rng.randint(3, 40))))


DEBUGGEE = r'''#include <stdio.h>
static int collatz(long n)
{
    int steps = 0;
    while (n != 1) {
        if (n % 2)
            n = 3 * n + 1;
        else
            n = n / 2;
        steps++;
    }
    return steps;
}
int main(void)
{
    long best = 0, arg = 0;
    for (long i = 1; i < 30; i++) {
        int s = collatz(i);
        if (s > best) {
            best = s;
            arg = i;
        }
    }
    printf("%ld %ld\n", arg, best);
    return 0;
}
'''


def debugger(tr, variant):
    """gdb stepping a real program: every step shows a new line or new values."""
    rng = tr.rng
    repo = Repo(rng, [])
    try:
        repo.write("c.c", DEBUGGEE)
        repo.sh("cc -g -O0 -o c c.c")
        n = rng.randint(35, 55)
        cmds = ["break collatz", "run"]
        plan = []
        for k in range(n):
            c = rng.choice(["next", "next", "next", "step", "print n", "print steps", "info locals", "continue"])
            plan.append(c)
        script = "set pagination off\nset confirm off\n"
        for c in cmds + plan:
            script += "echo @@@%s\\n\n%s\n" % (c, c)
        with open(os.path.join(repo.dir, "g.gdb"), "w") as f:
            f.write(script)
        p = subprocess.run(["gdb", "-q", "-batch", "-x", "g.gdb", "./c"], cwd=repo.dir, capture_output=True, text=True)
        parts = p.stdout.split("@@@")[1:]
        tool = {"next": "debugger_next", "step": "debugger_step_in", "continue": "debugger_continue"}
        for part in parts:
            c, _, out = part.partition("\n")
            out = re.sub(r"0x[0-9a-f]+", "0x5555", out).strip() or "(no output)"
            if c in ("break collatz", "run"):
                tr.call("debugger_command", {"command": c}, text(out), gap=rng.uniform(1, 6))
            elif c.startswith("print") or c == "info locals":
                tr.call("debugger_evaluate", {"expression": c.split(" ", 1)[1] if c.startswith("print") else "locals"},
                        text(out), gap=rng.uniform(1, 6))
            else:
                tr.call(tool[c], {"thread": 1}, text(out), gap=rng.uniform(1, 6))
    finally:
        repo.close()


def database(tr, variant):
    """SQLite queries while investigating. variant: none | bad_column | recount."""
    rng = tr.rng
    d = tempfile.mkdtemp(prefix="keel-trace-")
    db = os.path.join(d, "shop.db")
    try:
        setup = ["create table customers(id integer primary key, name text, country text, created text)",
                 "create table orders(id integer primary key, customer_id int, total_cents int, status text, created text)"]
        for s in setup:
            subprocess.run(["sqlite3", db, s], check=True)
        rows = []
        for i in range(1, 60):
            rows.append("insert into customers values(%d,'c%d','%s','2026-0%d-1%d')" % (
                i, i, rng.choice(["DE", "FR", "US", "JP", "BR"]), rng.randint(1, 9), rng.randint(0, 9)))
        for i in range(1, 300):
            rows.append("insert into orders values(%d,%d,%d,'%s','2026-0%d-2%d')" % (
                i, rng.randint(1, 59), rng.randint(500, 90000), rng.choice(["paid", "refunded", "pending", "paid"]),
                rng.randint(1, 9), rng.randint(0, 8)))
        subprocess.run(["sqlite3", db], input=";\n".join(rows) + ";", text=True, check=True)

        def q(sql):
            p = subprocess.run(["sqlite3", "-header", "-column", db, sql], capture_output=True, text=True)
            if p.returncode:                      # the exception's message, as an MCP server reports it
                return text("Error: " + p.stderr.strip().split("\n")[0].split(", ", 1)[-1], err=True)
            return text(p.stdout.strip() or "(0 rows)")
        tr.call("list_tables", {}, q(".tables"))
        tr.call("describe_table", {"table": "orders"}, q("pragma table_info(orders)"))
        qs = ["select status, count(*) from orders group by status",
              "select country, count(*) from customers group by country order by 2 desc",
              "select customer_id, sum(total_cents) from orders group by 1 order by 2 desc limit 10",
              "select * from orders where status = 'refunded' order by created desc limit 15",
              "select strftime('%m', created) m, count(*) from orders group by m",
              "select c.country, avg(o.total_cents) from orders o join customers c on c.id = o.customer_id group by 1",
              "select count(*) from orders where total_cents > 50000",
              "select * from customers where id in (select customer_id from orders where status='pending') limit 20",
              "select max(total_cents), min(total_cents) from orders",
              "select status, avg(total_cents) from orders group by status"]
        rng.shuffle(qs)
        for i, s in enumerate(qs):
            tr.call("query", {"sql": s}, q(s))
            if variant == "bad_column" and i == 4:
                ep = tr.episode()
                bad = ["select amount from orders where status = 'paid' limit 10",
                       "select amount from orders where status='paid' limit 10",
                       "SELECT amount FROM orders WHERE status = 'paid' LIMIT 10",
                       "select amount from orders where status = 'paid' limit 20",
                       "select o.amount from orders o where o.status = 'paid' limit 10",
                       "select amount, status from orders where status = 'paid' limit 10"]
                for k, s2 in enumerate(bad[:rng.randint(4, 6)]):
                    r = q(s2)
                    tr.call("query", {"sql": s2}, r, label="work" if k == 0 else "loop", episode=ep, kind="same_error")
                tr.call("describe_table", {"table": "orders"}, q("pragma table_info(orders)"))
            if variant == "recount" and i == 6:
                ep = tr.episode()
                s2 = "select count(*) from orders where status = 'pending'"
                r = q(s2)
                tr.call("query", {"sql": s2}, r)
                for k in range(rng.randint(3, 5)):
                    tr.call("query", {"sql": s2}, r, label="loop", episode=ep, kind="repeat")
        # a write, then the same count again: new information
        tr.call("execute", {"sql": "update orders set status='paid' where status='pending' and total_cents < 1000"},
                text("ok"))
        subprocess.run(["sqlite3", db, "update orders set status='paid' where status='pending' and total_cents < 1000"])
        tr.call("query", {"sql": "select status, count(*) from orders group by status"},
                q("select status, count(*) from orders group by status"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def browser(tr, variant):
    """A browser session. variant: none | stuck_button."""
    rng = tr.rng
    pages = ["/", "/products", "/products/espresso-grinder", "/cart", "/checkout/address", "/checkout/shipping",
             "/checkout/payment", "/checkout/review", "/order/confirmed"]
    host = rng.choice(["shop.example.com", "staging.example.org"])
    ref = 10

    def snap(path, extra=""):
        nonlocal ref
        ref += rng.randint(3, 9)
        body = "- page: https://%s%s\n- heading \"%s\"\n- button \"Continue\" [ref=e%d]\n- link \"Back\" [ref=e%d]%s" % (
            host, path, path.strip("/").replace("/", " > ").title() or "Home", ref, ref + 1, extra)
        return text(body), ref
    for i, p in enumerate(pages):
        tr.call("browser_navigate", {"url": "https://%s%s" % (host, p)}, text("Navigated to https://%s%s" % (host, p)))
        r, e = snap(p)
        tr.call("browser_snapshot", {}, r)
        if "checkout" in p:
            tr.call("browser_type", {"element": "first field", "ref": "e%d" % (e + 2), "text": rng.choice(
                ["Ada Lovelace", "12 Rue de Rivoli", "4242 4242 4242 4242", "express"])}, text("Typed into field"))
        if variant == "stuck_button" and p == "/checkout/payment":
            ep = tr.episode()
            stuck, e = snap(p, "\n- alert \"Card declined: use another card\"")
            click = text("Clicked button \"Continue\" [ref=e%d]" % e)
            tr.call("browser_click", {"element": "Continue", "ref": "e%d" % e}, click)
            tr.call("browser_snapshot", {}, stuck)
            for k in range(rng.randint(3, 5)):
                tr.call("browser_click", {"element": "Continue", "ref": "e%d" % e}, click, label="loop", episode=ep,
                        kind="alternation")
                tr.call("browser_snapshot", {}, stuck, label="loop", episode=ep, kind="alternation")
            break
        tr.call("browser_click", {"element": "Continue", "ref": "e%d" % e}, text("Clicked button \"Continue\" [ref=e%d]" % e))
    tr.call("browser_take_screenshot", {"filename": "final-%d.png" % rng.randint(1, 99)}, text("Saved screenshot"))


def knowledge(tr, variant):
    """Docs lookups and a memory graph. variant: none | reasked."""
    rng = tr.rng
    topics = [("rate limits", "The API allows 600 requests per minute per token; 429 responses carry Retry-After."),
              ("webhooks", "Webhooks are signed with HMAC-SHA256 in the X-Signature header."),
              ("pagination", "List endpoints return next_cursor; pass it as cursor to continue."),
              ("idempotency", "Send Idempotency-Key on POST; keys live 24 hours."),
              ("sandbox", "The sandbox resets every night at 02:00 UTC."),
              ("errors", "Errors are JSON with code, message and request_id.")]
    rng.shuffle(topics)
    for t, a in topics:
        tr.call("ask_docs", {"question": "How do %s work?" % t, "product": "payments-api"}, text(a))
        tr.call("create_entities", {"entities": [{"name": t, "entityType": "api_fact", "observations": [a]}]},
                text(json.dumps([{"name": t, "entityType": "api_fact"}])))
    if variant == "reasked":
        ep = tr.episode()
        ans = ("Refunds are not covered by this documentation set. See the Refunds guide in the dashboard, or "
               "contact support.")
        asks = ["How do partial refunds work?", "Can I refund part of a payment?", "partial refund API",
                "What is the endpoint for partial refunds?", "How to issue a refund for only some items",
                "refund a portion of a charge"]
        rng.shuffle(asks)
        for k, qq in enumerate(asks[:rng.randint(4, 6)]):
            tr.call("ask_docs", {"question": qq, "product": "payments-api"}, text(ans), label="work" if k == 0 else "loop",
                    episode=ep, kind="reasked")
    for k in range(rng.randint(3, 6)):
        t = rng.choice(topics)[0]
        tr.call("search_nodes", {"query": t}, text(json.dumps({"entities": [{"name": t}], "relations": []})))
        tr.call("add_observations", {"observations": [{"entityName": t, "contents": ["checked on %s" % tr.t.date()]}]},
                text("ok"))
    tr.call("read_graph", {}, text("%d entities, %d relations" % (len(topics), rng.randint(0, 4))))


def rpc_error(tr, variant):
    """A tool called with a wrong argument name: the same JSON-RPC error however the rest varies."""
    rng = tr.rng
    repo = Repo(rng, ["json"])
    try:
        for f in ["json/__init__.py", "json/decoder.py", "json/encoder.py"]:
            tr.call("read_file", {"path": f}, repo.read(f)[0])
        ep = tr.episode()
        err = {"code": -32602, "message": "Invalid params: unknown property 'file' (expected 'path')"}
        for k, extra in enumerate([{}, {"encoding": "utf-8"}, {"head": 40}, {"encoding": "utf8", "head": 20},
                                   {"tail": 10}, {"head": 100}][:rng.randint(4, 6)]):
            a = {"file": "json/scanner.py"}
            a.update(extra)
            tr.call("read_text_file", a, error=err, label="work" if k == 0 else "loop", episode=ep, kind="same_error")
        tr.call("read_text_file", {"path": "json/scanner.py"}, repo.read("json/scanner.py")[0])
        for f in repo.files()[:rng.randint(5, 9)]:
            tr.call("get_file_info", {"path": f}, text("size: %d\ntype: file" % os.path.getsize(os.path.join(repo.dir, f))))
    finally:
        repo.close()


def growing_log(tr, variant):
    """Hard negative: the same call whose answer changes, a log tailed while a service starts; a clock."""
    rng = tr.rng
    log = []
    events = ["starting worker pool size=8", "connected to postgres", "migrations: 0 pending", "listening on :8080",
              "GET /healthz 200 1ms", "cache warmed 1200 keys", "GET /api/orders 200 34ms", "POST /api/orders 201 51ms",
              "job sweep started", "job sweep done in 2.1s", "GET /api/orders/17 404 3ms", "config reloaded"]
    for k in range(rng.randint(14, 22)):
        for e in range(rng.randint(1, 3)):
            log.append("2026-10-0%d %02d:%02d:%02d INFO %s" % (rng.randint(1, 9), rng.randint(0, 23), rng.randint(0, 59),
                                                             rng.randint(0, 59), rng.choice(events)))
        tr.call("tail_file", {"path": "/var/log/app/server.log", "lines": 20}, text("\n".join(log[-20:])),
                gap=rng.uniform(4, 15))
        if rng.random() < 0.3:
            tr.call("get_current_time", {"timezone": "Europe/Berlin"}, text(tr.t.strftime("%Y-%m-%dT%H:%M:%S+01:00")))
        if rng.random() < 0.25:
            tr.call("http_get", {"url": "http://localhost:8080/healthz"},
                    text(json.dumps({"status": "ok", "uptime_s": 5 * k + rng.randint(0, 4)})))


def configs(tr, variant):
    """Hard negative: many near-identical files in different places, each read once."""
    rng = tr.rng
    services = ["auth", "billing", "search", "gateway", "notifier", "reports", "scheduler", "media", "profile",
                "inventory", "payments", "ledger", "exports", "imports", "audit", "metrics", "mailer", "webhooks",
                "sessions", "catalog", "pricing", "cart", "orders", "shipping", "returns", "reviews", "tags"]
    rng.shuffle(services)
    n = rng.randint(20, 27)
    for s in services[:n]:
        body = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  labels: {app: %s}\nspec:\n"
                "  replicas: %d\n  template:\n    spec:\n      containers:\n        - name: %s\n"
                "          image: registry.example.com/%s:1.%d.%d\n          resources: {limits: {memory: %dMi}}\n" % (
                    s, s, rng.choice([2, 2, 3]), s, s, rng.randint(2, 9), rng.randint(0, 30), rng.choice([256, 512])))
        tr.call("read_file", {"path": "deploy/%s/deployment.yaml" % s}, text(body), gap=rng.uniform(1, 6))
    tr.call("search_files", {"pattern": "memory: 256Mi", "path": "deploy"}, text("%d matches" % rng.randint(5, 12)))


SCENARIOS = [
    ("explore", explore, ["none", "reread", "bounce"]),
    ("build", build_test, ["none", "rerun", "same_error"]),
    ("paging", paging, ["none", "reworded_empty"]),
    ("polling", polling, ["progress", "same_status", "failed"]),
    ("tracker", tracker, ["none", "same_error"]),
    ("debugger", debugger, ["none"]),
    ("database", database, ["none", "bad_column", "recount"]),
    ("browser", browser, ["none", "stuck_button"]),
    ("knowledge", knowledge, ["none", "reasked"]),
    ("rpc-error", rpc_error, ["wrong_param"]),
    ("tail-log", growing_log, ["none"]),
    ("configs", configs, ["none"]),
]


def main():
    rng = random.Random(20261124)
    out = {"dev": [], "test": []}
    for name, fn, variants in SCENARIOS:
        for v in variants:
            # each variant three times, each with its own seed: one recording to
            # dev, one to test, the third to either
            splits = ["dev", "test", rng.choice(["dev", "test"])]
            rng.shuffle(splits)
            for split in splits:
                tr = Trace("%s-%s" % (name, v), rng.randrange(1 << 30))
                fn(tr, v)
                out[split].append(tr)
    for trs in out.values():
        rng.shuffle(trs)
    for split, trs in out.items():
        d = os.path.join(HERE, split)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for i, tr in enumerate(trs):
            with open(os.path.join(d, "%02d-%s.jsonl" % (i + 1, tr.name)), "w") as f:
                for line in tr.lines:
                    f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        calls = sum(len(t.lines) for t in trs)
        loops = sum(1 for t in trs for l in t.lines if l["label"] == "loop")
        print("%s: %d traces, %d calls, %d labelled loop, %d episodes" % (
            split, len(trs), calls, loops, sum(t.episodes for t in trs)))


if __name__ == "__main__":
    main()
