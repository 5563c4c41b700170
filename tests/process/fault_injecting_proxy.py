#!/usr/bin/env python3
"""An attnspec-process/1 adapter in front of another one that injects
faults into a fraction of the cases (standard library only), for measuring
how a run survives them (bench/fault_load.py).

    fault_injecting_proxy.py --rate 0.05 --seed 7 --log faults.txt -- COMMAND...

COMMAND is the real adapter. Each run request is passed through, except on
a fraction --rate of the cases, chosen from a hash of the case's inputs and
--seed (the same run faults the same cases), where the proxy instead
crashes (exits with status 3), hangs (never answers) or writes garbage on
stdout, taking turns by the hash. Each fault appends "HASH FAULT" to --log
before it happens.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

FAULTS = ("crash", "hang", "garbage")


def case_hash(case_dir, seed):
    digest = hashlib.sha256(seed.encode())
    for name in ("case.json", "q.npy", "k.npy", "v.npy", "mask.npy"):
        path = os.path.join(case_dir, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--seed", default="0")
    parser.add_argument("--log", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    real = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") == "run":
            digest = case_hash(request["case"], args.seed)
            value = int(digest[:16], 16) / 16.0 ** 16
            if value < args.rate:
                fault = FAULTS[int(digest[16:24], 16) % len(FAULTS)]
                with open(args.log, "a") as log:
                    log.write("%s %s\n" % (digest, fault))
                if fault == "crash":
                    sys.exit(3)
                if fault == "hang":
                    time.sleep(3600)
                print("Traceback (most recent call last): injected garbage", flush=True)
                continue
        real.stdin.write(line)
        real.stdin.flush()
        if request.get("op") == "bye":
            break
        print(real.stdout.readline(), end="", flush=True)
    real.stdin.close()
    real.wait()


if __name__ == "__main__":
    main()
