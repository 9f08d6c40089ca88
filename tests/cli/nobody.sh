# nobody.sh - sourced by CLI tests that run dtsim as an unprivileged user under a process
# limit (threads the system will not start). Not a test itself (tests.cmake runs test_*.sh).
#
# as_nobody CMD...   runs CMD as user nobody, group nogroup, no supplementary groups.
# nobody_can_run     succeeds when that check can run here: root (to change user), setpriv and
#                    prlimit, a user nobody, a build without the sanitizers (their runtimes need
#                    threads of their own), and a $DTSIM that nobody can execute (a checkout under
#                    /root is not; setpriv itself runs a program it cannot reach, so the check
#                    runs it through sh, as prlimit would).
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
nobody_can_run() {
  [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && command -v prlimit >/dev/null \
    && id nobody >/dev/null 2>&1 && ! { nm "$DTSIM" 2>/dev/null | grep -c __asan_init >/dev/null; } \
    && as_nobody sh -c 'exec "$0" --version' "$DTSIM" >/dev/null 2>&1
}
NOBODY_SKIP="needs root, setpriv, prlimit, no sanitizers, a dtsim nobody can run"
