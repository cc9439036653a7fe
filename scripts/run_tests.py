#!/usr/bin/env python3
"""Runs the workspace's test executables in lanes, side by side, for scripts/test.

    scripts/run_tests.py ARTIFACTS.json [EXTRA TEST ARGS...]

ARTIFACTS.json is the output of `cargo test --no-run --message-format=json-render-diagnostics`: every test
executable cargo built, with its package. `cargo test` would run them one after another; most of the suite's time
is spent waiting (on fault campaigns' schedules, session timeouts, JVMs starting), so three lanes run at once on
two cores:

* the fault campaigns (zklock-chaos's `campaign` tests, each a time-bound campaign that mostly sleeps between
  faults), several at a time;
* the library's and the embedded server's tests;
* the command line's tests and everything else;
* the documentation (below), the scale smoke test and then the cache campaigns.

Each executable runs in its package's directory, as `cargo test` runs it, with its output kept in a log that is
printed whole when it ends (lanes never interleave lines). A lane goes on after a failure, so one run shows every
failure. The documentation tests (`cargo test --doc`, which compiles each example) and the published crates' API
documentation with warnings denied (`cargo doc`) run in a fourth lane. Ends with a line per failed test (its name
and the first lines of its panic message: `run_tests: failed test …`, so that a CI log cut in the middle still
shows the cause), then the plain line `N passed, M failed` (summed from every `test result:` line), and exits
non-zero if anything failed.

Time, on the 2-core machine (fresh clone, `CI=true .ci/run`, 29 November 2026): 815 s in all, still over the 10
minutes the guide allows (it was 986-1,025 s before incremental compilation was turned off for this build and the
doc tests were given the build's features). The build is 313 s: ~350 crates, whose compile is 372 of the 615
unit-seconds (aws-lc-sys alone 57 s: zookeeper-client's rustls needs it; bindgen and libclang for Kerberos), our
crates 243. The lanes end within 100 s of each other, because both cores are busy throughout: campaigns 472 s;
zklock's integration tests 339 s plus server compat 109 s; the CLI's 340 s; documentation lane 404 s (cargo doc
175 s, which checks every dependency again in `check` mode; scale smoke 148 s; doc tests 10 s; cache campaigns
71 s). Moving a test between lanes gains little; less work is what would.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

# Campaigns at a time: each is a server and a few contender processes, mostly asleep between faults.
CAMPAIGN_THREADS = "3"
# The other binaries run with libtest's default, a test per core. Four at a time in zklock's and the CLI's
# integration tests (alone, zklock's took 178 s with two, 66 % of a core, and 127 s with four, at the same CPU) did
# not shorten the suite: both cores are busy through most of the test phase (vmstat: 0-5 % idle), so those lanes
# gained 80 and 160 s and the documentation lane, starved, lost 130 (29 November 2026). That run found a race
# (docs/reliability.md, finding 11), now fixed.


def executables(path):
    found = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if msg.get("reason") != "compiler-artifact" or not msg.get("profile", {}).get("test"):
                continue
            exe = msg.get("executable")
            if not exe:
                continue
            package = msg["package_id"]
            # "path+file:///work/main/crates/cli#zklock-cli@0.1.0", "path+file:///work/main/crates/zklock#0.1.0"
            # (the name is the directory's), or the older "zklock-cli 0.1.0 (path+file://...)".
            m = re.search(r"#([^@]+)@", package) or re.search(r"/([^/#]+)#[^@]+$", package) or re.match(r"(\S+) ", package)
            name = m.group(1) if m else package
            found.append(
                {
                    "package": name,
                    "target": msg["target"]["name"],
                    "kind": msg["target"]["kind"][0],
                    "exe": exe,
                    "dir": os.path.dirname(msg["manifest_path"]),
                }
            )
    return found


def lane_of(test):
    if test["package"] == "zklock-chaos" and test["target"] == "campaign":
        return 0
    if test["package"] in ("zklock", "zklock-server", "zklock-storage", "zklock-codec"):
        return 1
    # The scale smoke test (about two minutes) beside the documentation: in lane 2 it made that lane the longest.
    if test["package"] == "zklock-compare" and test["target"] == "scale_smoke":
        return 3
    return 2


RESULT = re.compile(r"test result: (\w+)\. (\d+) passed; (\d+) failed")

lock = threading.Lock()
totals = {"passed": 0, "failed": 0, "broken": [], "why": []}


def panics(out):
    """Each failed test's name and the first lines of its panic message: a lane's output can be long (a backtrace),
    and the end of the run repeats these, so that the cause is in the last lines a CI log shows."""
    why = []
    for m in re.finditer(r"^---- (\S+) stdout ----$", out, re.M):
        rest = out[m.end():].splitlines()
        # Within this test's own section: up to the next `---- … stdout ----` or the list of failures.
        end = next((i for i, line in enumerate(rest) if line.startswith("---- ") or line == "failures:"), len(rest))
        rest = rest[:end]
        at = next((i for i, line in enumerate(rest) if "panicked at" in line), None)
        if at is not None:
            message = []
            for line in rest[at + 1:at + 4]:
                if not line.strip() or line.startswith("stack backtrace"):
                    break
                message.append(line)
            why.append(f"{m.group(1)}: {' | '.join(message)[:400]}")
    return why


def run_lane(number, tests, extra):
    for test in tests:
        if "args" in test:
            args, label = test["args"], test["label"]
        else:
            args = [test["exe"]] + extra
            if number == 0:
                args += ["--test-threads", CAMPAIGN_THREADS]
            label = f"{test['package']} {test['kind']} {test['target']}"
        started = time.monotonic()
        proc = subprocess.run(
            args,
            cwd=test["dir"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        took = time.monotonic() - started
        out = proc.stdout.decode("utf-8", "replace")
        passed = failed = 0
        for m in RESULT.finditer(out):
            passed += int(m.group(2))
            failed += int(m.group(3))
        with lock:
            sys.stdout.write(f"\n===== {label} ({took:.0f}s, exit {proc.returncode}) =====\n{out}")
            sys.stdout.flush()
            totals["passed"] += passed
            totals["failed"] += failed
            if proc.returncode != 0:
                totals["broken"].append(f"{label} (exit {proc.returncode})")
                totals["why"].extend(panics(out))
            print(f"run_tests: lane {number}: {label}: {passed} passed, {failed} failed, {took:.0f}s", file=sys.stderr)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tests = executables(sys.argv[1])
    extra = sys.argv[2:]
    if not tests:
        sys.exit("run_tests: no test executable in " + sys.argv[1])
    lanes = [[], [], [], []]
    for test in tests:
        lanes[lane_of(test)].append(test)
    late = []
    # The campaigns are the longest lane: the cache campaigns (four, about two minutes together) run in the
    # documentation's lane once it is done, two at a time, the others in lane 0.
    for test in list(lanes[0]):
        label = f"{test['package']} {test['kind']} {test['target']}"
        lanes[0].remove(test)
        lanes[0].append(dict(test, args=[test["exe"], "--skip", "cache_", "--test-threads", CAMPAIGN_THREADS] + extra,
                             label=label + " (but the caches)"))
        late.append(dict(test, args=[test["exe"], "cache_", "--test-threads", "2"] + extra,
                         label=label + " (the caches)"))
    workspace = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lanes[3].append(
        # With the build's features (scripts/test builds with --all-features): without them cargo compiled
        # zookeeper-client, zklock and four other crates again for these tests alone (40 s of 2 cores against 10 s).
        {"args": ["cargo", "test", "--workspace", "--all-features", "--doc"], "label": "doc tests", "dir": workspace}
    )
    # The API documentation of the published crates builds without a warning (a broken link is one). Not the
    # unpublished tools (chaos, compare, testkit): documenting them also checked plotters, rcgen and the rest of
    # their dependencies, minutes of a 2-core machine beside the timing-sensitive campaigns, for pages no user reads.
    published = ["zklock-codec", "zklock-storage", "zklock-server", "zklock", "zklock-cli", "zklock-bench"]
    lanes[3].append(
        {
            "args": ["env", "RUSTDOCFLAGS=-D warnings", "cargo", "doc", "--no-deps"]
            + [arg for crate in published for arg in ("-p", crate)],
            "label": "API documentation (cargo doc, warnings denied)",
            "dir": workspace,
        }
    )
    lanes[3].extend(late)
    threads = [threading.Thread(target=run_lane, args=(n, lane, extra)) for n, lane in enumerate(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print()
    for broken in totals["broken"]:
        print(f"run_tests: FAILED: {broken}")
    for why in totals["why"]:
        print(f"run_tests: failed test {why}")
    print(f"{totals['passed']} passed, {totals['failed']} failed")
    sys.exit(1 if totals["broken"] or totals["failed"] else 0)


if __name__ == "__main__":
    main()
