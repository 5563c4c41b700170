#!/usr/bin/env python3
"""A deliberately misbehaving attnspec-process/1 adapter (standard library
only), for tests/process_protocol_test.cpp: each --fault makes it break the
protocol in one way, so attnspec's handling of that failure can be checked.

  none          answer every case correctly shaped (zeros)
  crash         exit with status 3 on a run request
  signal        kill itself with SIGSEGV on a run request
  hang          never answer a run request
  garbage       print a line that is not JSON
  wrong-shape   write out.npy with one row too few
  not-format    write float32 values that the declared float16 output cannot hold
  no-output     answer ok without writing out.npy
  wrong-id      answer with the id of another request
  unsupported   decline every case
  error         report an error for every case
  bad-hello     misspell a capability in the hello reply
  silent        exit before answering the hello
  binary        answer with bytes that are not UTF-8, an escape sequence among them
  escape-error  report an error of 500 kB that starts with terminal escape sequences
  long-line     answer with 100 MB and no newline
  out-devzero   make out.npy a symbolic link to /dev/zero
  out-fifo      make out.npy a FIFO that nobody writes
  descendants   start helpers that outlive it (one with setsid, one a daemon
                whose parent exited) and write their pids to --pidfile

--stderr-kb N writes N kB to stderr per case (with any fault).
--max-elements N declares that many logits (B Hq L S) at most in the hello.

With --once FILE the fault happens only the first time (FILE remembers it),
so tests can check that attnspec restarts the adapter and carries on; with
--after-first FILE every time but the first (a run's own adapter starts
well, those of its --jobs workers do not).
"""
import argparse
import json
import os
import signal
import struct
import subprocess
import sys
import time


def write_npy(path, shape, values, descr="<f4"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % n for n in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = {"<f4": "f", "<f8": "d"}[descr]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def start_descendants(pidfile):
    """Two helpers that outlive a plain kill of the adapter's process group:
    one in a session of its own, one a daemon whose parent has exited."""
    setsid_child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.setsid()
        daemon = os.fork()
        if daemon == 0:
            os.close(read_end)
            os.close(write_end)
            time.sleep(600)
            os._exit(0)
        os.write(write_end, str(daemon).encode())
        os._exit(0)
    os.close(write_end)
    daemon_pid = int(os.read(read_end, 64).decode())
    os.wait()
    with open(pidfile, "w") as f:
        f.write("%d %d\n" % (setsid_child.pid, daemon_pid))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none")
    parser.add_argument("--once")
    parser.add_argument("--after-first")
    parser.add_argument("--output", default="float32")
    parser.add_argument("--stderr-kb", type=int, default=0)
    parser.add_argument("--pidfile")
    parser.add_argument("--max-elements", type=int)
    args = parser.parse_args()
    fault = args.fault
    if args.once:
        if os.path.exists(args.once):
            fault = "none"
        else:
            open(args.once, "w").close()
    if args.after_first:
        if not os.path.exists(args.after_first):
            open(args.after_first, "w").close()
            fault = "none"
    if fault == "silent":
        return
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "bye":
            return
        if request["op"] == "hello":
            caps = {"masks": ["bool", "additive"], "causal": ["top_left", "bottom_right"], "gqa": True,
                    "scale": True, "softcap": True, "dv_ne_dk": True}
            if args.max_elements is not None:
                caps["max_elements"] = args.max_elements
            if fault == "bad-hello":
                caps["softCap"] = caps.pop("softcap")
            reply = {"protocol": 1, "name": "faulty-" + args.fault,
                     "formats": {"input": args.output, "accumulate": "float32", "output": args.output},
                     "capabilities": caps}
            print(json.dumps(reply), flush=True)
            if fault == "descendants":
                start_descendants(args.pidfile)
            continue
        with open(os.path.join(request["case"], "case.json")) as f:
            case = json.load(f)
        shape = [case["batch"], case["q_heads"], case["q_len"], case["d_v"]]
        reply = {"id": request["id"], "ok": True}
        for _ in range(args.stderr_kb):
            sys.stderr.write("e" * 1023 + "\n")
        sys.stderr.flush()
        if fault == "crash":
            sys.exit(3)
        elif fault == "signal":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif fault == "hang":
            time.sleep(3600)
        elif fault == "garbage":
            print("Traceback (most recent call last): oops", flush=True)
            continue
        elif fault == "binary":
            sys.stdout.buffer.write(b"\xff\xfe\x1b[2J\x1b]0;pwned\x07\x00\xc3(\x9b31m garbage\n")
            sys.stdout.flush()
            continue
        elif fault == "escape-error":
            reply = {"id": request["id"], "ok": False, "error": "\x1b[2J\x1b]0;pwned\x07" + "A" * 500000}
        elif fault == "long-line":
            sys.stdout.write("x" * 100000000)
            sys.stdout.flush()
            time.sleep(3600)
        elif fault in ("out-devzero", "out-fifo"):
            path = os.path.join(request["case"], "out.npy")
            if fault == "out-devzero":
                os.symlink("/dev/zero", path)
            else:
                os.mkfifo(path)
            print(json.dumps(reply), flush=True)
            continue
        elif fault == "wrong-id":
            reply["id"] = request["id"] + 1
        elif fault == "unsupported":
            reply = {"id": request["id"], "ok": False, "unsupported": True, "error": "no such shape here"}
        elif fault == "error":
            reply = {"id": request["id"], "ok": False, "error": "out of memory (simulated)"}
        if fault == "wrong-shape":
            shape[2] -= 1
        count = shape[0] * shape[1] * shape[2] * shape[3]
        value = 0.1 if fault == "not-format" else 0.0
        if fault != "no-output" and reply["ok"]:
            write_npy(os.path.join(request["case"], "out.npy"), shape, [value] * count)
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
