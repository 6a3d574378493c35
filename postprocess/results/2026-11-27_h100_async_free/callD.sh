#!/usr/bin/env bash
# Issue 34: the async fault tests (a hung serving GMI, a hung trainer, a killed serving GMI) and
# test_channels with the mailbox's bounded receive, on one H100.
set -u
rm -rf /tmp/b; mkdir -p /tmp/b && tar xJf .gpu/i34j.tar.xz -C /tmp/b
source .gpu/env.sh /tmp/b
B=/tmp/b/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
timeout 90 mpiexec -n 3 --oversubscribe $B/test_channels --gtest_brief=1 > $W/tc.log 2>&1; echo "test_channels np3 rc=$? $(grep -aE 'PASSED|FAILED' $W/tc.log | head -3)"
timeout 200 python3 tests/cli/check_async.py faults --gmi $B/gmi_drl --mpiexec $(which mpiexec) --workdir $W/f > $W/f.log 2>&1
echo "check_async faults rc=$?"; grep -a -v '^\[' $W/f.log | grep -a -E 'exit|FAIL|error:|ok$' | cut -c1-400 | head -20
