/* kern_tcp_ring.c - ring all-reduce between processes over TCP sockets on loopback, the way
 * Gloo's ring runs between machines.
 *
 * kern_tcp_ring_create forks one process per rank. Before forking it opens one listening socket
 * per rank on 127.0.0.1 (ephemeral ports), so every child knows its right neighbour's port
 * without a rendezvous: rank r connects to rank r+1's listener and accepts one connection on its
 * own (from r-1). Each rank therefore holds two TCP streams, to the right (send only) and from
 * the left (receive only), with TCP_NODELAY set: small chunks must not wait for Nagle.
 *
 * A run is the ring of kern_cpu_ring_allreduce over byte streams: n-1 reduce-scatter steps, then
 * n-1 all-gather steps, segment k = [k count/n, (k+1) count/n) elements, in the summation order
 * kern_allreduce_reference reproduces bit for bit. Within a run the send stream is pipelined
 * across steps the way Gloo's chunked ring and NCCL's ring are: a chunk of step s+1 leaves as
 * soon as the same chunk of step s has arrived and been reduced (or copied), so a segment never
 * waits for its whole predecessor. Both sockets are non-blocking and one poll() loop drives
 * them, so a rank is always willing to receive while it sends (two ranks writing large segments
 * at each other with blocking sockets would deadlock once both kernel buffers filled).
 *
 * Control: a socket pair per child. The parent sends PREP (copy the shared input into the private
 * work buffer, outside the timed region), then GO to every child; each child answers with the
 * CLOCK_MONOTONIC time it finished (the clock is system-wide, so children's stamps compare with
 * the parent's), and the run's time is the last finish minus the parent's release time, like the
 * thread ring. VERIFY additionally copies each rank's result into shared memory for the caller
 * to compare. Inputs and results live in one MAP_SHARED region made before the fork; the data
 * itself only ever moves through the sockets.
 *
 * Lifetime: a child exits (_exit, no atexit handlers of the parent) on QUIT or when its control
 * pipe reaches end of file, so a parent that dies or forgets to destroy leaves no orphans for
 * long. kern_tcp_ring_destroy sends QUIT and reaps every child.
 */
/* MAP_ANONYMOUS is not POSIX (the build defines _POSIX_C_SOURCE) */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dtsim/kern.h"

enum { CMD_PREP = 1, CMD_GO, CMD_GO_VERIFY, CMD_QUIT };

typedef struct tcp_cmd {
    int32_t cmd;
    uint64_t count;
} tcp_cmd;

typedef struct tcp_reply {
    int32_t status;   /* 0 ok, else errno of the failure */
    double t_end;     /* CLOCK_MONOTONIC seconds when this rank finished (GO) */
    char what[96];    /* the failing call, for the message */
} tcp_reply;

struct kern_tcp_ring {
    int n;
    size_t chunk_bytes, max_count;
    kern_dtype dtype;
    pid_t *pid;
    int *to_child, *from_child;   /* pipe ends held by the parent */
    unsigned char *shm;           /* inputs (n x max) then results (n x max) */
    size_t shm_bytes;
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t seg_begin(size_t count, int n, int k) { return (count * (size_t)k) / (size_t)n; }
static int mod(int a, int n) { return ((a % n) + n) % n; }

/* Control messages go over AF_UNIX socket pairs rather than pipes so that writing to a rank
 * that died is an error (EPIPE, MSG_NOSIGNAL) instead of a SIGPIPE that kills the caller. */
static int write_full(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* 0 on success, 1 on end of file before any byte, -1 on error or a short message. */
static int read_full(int fd, void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) return got ? -1 : 1;
        if (r < 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

/* ---------------------------------------------------------------- child */

typedef struct child {
    int rank, n;
    kern_dtype dtype;
    size_t es, chunk_bytes;
    int right, left;              /* sockets */
    unsigned char *work, *stage;  /* private work buffer, receive staging (one chunk + element) */
    const unsigned char *input;   /* shared */
    unsigned char *result;        /* shared */
} child;

static void fail_reply(int fd, const char *what)
{
    tcp_reply rep = {.status = errno ? errno : EIO};
    snprintf(rep.what, sizeof rep.what, "%s", what);
    (void)write_full(fd, &rep, sizeof rep);
}

/* One all-reduce of count elements in c->work. Returns 0, or -1 with errno set and *what named.
 *
 * Step s (0 .. 2(n-1)-1) sends segment send_seg(s) to the right and receives recv_seg(s) from
 * the left; send_seg(s+1) == recv_seg(s), so step s+1 may send exactly the bytes of step s that
 * have arrived and been processed: that is the whole pipelining rule, and it also means the
 * send step is never more than one ahead of the receive step. */
static int child_allreduce(child *c, size_t count, const char **what)
{
    int n = c->n, r = c->rank, steps = 2 * (n - 1);
    size_t es = c->es;
    size_t chunk = c->chunk_bytes / es * es;
    if (chunk == 0) chunk = es;
    int ss = 0, rs = 0;        /* current send and receive steps */
    size_t sent = 0, rcvd = 0; /* bytes of those steps sent / received and processed */
    size_t staged = 0;         /* received bytes not yet processed (less than one element after
                                  each pass) */
    while (ss < steps || rs < steps) {
        int sseg = ss < n - 1 ? mod(r - ss, n) : mod(r + 1 - (ss - (n - 1)), n);
        int rseg = rs < n - 1 ? mod(r - rs - 1, n) : mod(r - (rs - (n - 1)), n);
        size_t s0 = seg_begin(count, n, sseg) * es, s_len = seg_begin(count, n, sseg + 1) * es - s0;
        size_t r0 = seg_begin(count, n, rseg) * es, r_len = seg_begin(count, n, rseg + 1) * es - r0;
        if (ss < steps && sent == s_len) { /* finished (or empty) send step */
            ss++;
            sent = 0;
            continue;
        }
        if (rs < steps && rcvd == r_len) {
            rs++;
            rcvd = 0;
            continue;
        }
        size_t sendable = 0;
        if (ss < steps) sendable = (ss == 0 || rs > ss - 1) ? s_len : rs == ss - 1 ? rcvd : 0;
        struct pollfd pf[2];
        int np = 0, si = -1, ri = -1;
        if (ss < steps && sent < sendable) {
            si = np;
            pf[np++] = (struct pollfd){.fd = c->right, .events = POLLOUT};
        }
        if (rs < steps) {
            ri = np;
            pf[np++] = (struct pollfd){.fd = c->left, .events = POLLIN};
        }
        if (np == 0) { /* a send waits only for a receive still due: cannot happen */
            errno = EDEADLK;
            *what = "the ring schedule";
            return -1;
        }
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR) continue;
            *what = "poll";
            return -1;
        }
        if (si >= 0 && pf[si].revents) {
            size_t len = sendable - sent;
            if (len > chunk) len = chunk;
            ssize_t w = send(c->right, c->work + s0 + sent, len, MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                *what = "send to the right neighbour";
                return -1;
            }
            if (w > 0) sent += (size_t)w;
        }
        if (ri >= 0 && pf[ri].revents) {
            size_t want = r_len - rcvd - staged;
            if (want > chunk) want = chunk;
            ssize_t got = recv(c->left, c->stage + staged, want, 0);
            if (got == 0) {
                errno = ECONNRESET;
                *what = "receive from the left neighbour (connection closed)";
                return -1;
            }
            if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                *what = "receive from the left neighbour";
                return -1;
            }
            if (got > 0) staged += (size_t)got;
            /* whole elements: reduced into place (reduce-scatter) or copied (all-gather) */
            size_t whole = staged / es * es;
            if (whole) {
                if (rs < n - 1)
                    kern_reduce_into(c->dtype, c->work + r0 + rcvd, c->stage, whole / es);
                else
                    memcpy(c->work + r0 + rcvd, c->stage, whole);
                memmove(c->stage, c->stage + whole, staged - whole);
                staged -= whole;
                rcvd += whole;
            }
        }
    }
    return 0;
}

static void child_main(child *c, int cmd_fd, int rep_fd, size_t max_count)
{
    size_t bytes = max_count * c->es;
    c->work = malloc(bytes ? bytes : 1);
    c->stage = malloc(c->chunk_bytes + c->es);
    if (!c->work || !c->stage) {
        errno = ENOMEM;
        fail_reply(rep_fd, "malloc");
        _exit(1);
    }
    for (;;) {
        tcp_cmd cmd;
        int rc = read_full(cmd_fd, &cmd, sizeof cmd);
        if (rc != 0 || cmd.cmd == CMD_QUIT) _exit(0);
        tcp_reply rep = {0};
        if (cmd.cmd == CMD_PREP) {
            memcpy(c->work, c->input, cmd.count * c->es);
        } else {
            const char *what = "";
            errno = 0;
            if (child_allreduce(c, cmd.count, &what) != 0) {
                fail_reply(rep_fd, what);
                _exit(1);
            }
            rep.t_end = mono_s();
            if (cmd.cmd == CMD_GO_VERIFY) memcpy(c->result, c->work, cmd.count * c->es);
        }
        if (write_full(rep_fd, &rep, sizeof rep) != 0) _exit(1);
    }
}

/* ---------------------------------------------------------------- parent */

static int sys_fail(dt_error *err, const char *what)
{
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "tcp ring: %s failed: %s", what, strerror(errno));
}

static void stop_children(kern_tcp_ring *r)
{
    for (int i = 0; i < r->n; i++) {
        if (r->to_child[i] >= 0) {
            tcp_cmd q = {.cmd = CMD_QUIT};
            (void)write_full(r->to_child[i], &q, sizeof q);
            close(r->to_child[i]);
            r->to_child[i] = -1;
        }
    }
    for (int i = 0; i < r->n; i++) {
        if (r->from_child[i] >= 0) close(r->from_child[i]);
        r->from_child[i] = -1;
        if (r->pid[i] > 0) {
            while (waitpid(r->pid[i], NULL, 0) < 0 && errno == EINTR) {}
            r->pid[i] = 0;
        }
    }
}

int kern_tcp_ring_pid(const kern_tcp_ring *r, int rank)
{
    return rank >= 0 && rank < r->n ? (int)r->pid[rank] : -1;
}

void kern_tcp_ring_destroy(kern_tcp_ring *r)
{
    if (!r) return;
    stop_children(r);
    if (r->shm) munmap(r->shm, r->shm_bytes);
    free(r->pid);
    free(r->to_child);
    free(r->from_child);
    free(r);
}

int kern_tcp_ring_create(int ranks, size_t chunk_bytes, kern_dtype t, size_t max_count, uint64_t seed,
                         kern_tcp_ring **out, dt_error *err)
{
    *out = NULL;
    if (ranks < 2)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "tcp ring: needs 2 or more ranks, found %d", ranks);
    kern_tcp_ring *r = dt_xcalloc(1, sizeof *r);
    r->n = ranks;
    r->dtype = t;
    r->max_count = max_count;
    r->chunk_bytes = chunk_bytes ? chunk_bytes : 64 * 1024;
    r->pid = dt_xcalloc((size_t)ranks, sizeof *r->pid);
    r->to_child = dt_xmalloc((size_t)ranks * sizeof *r->to_child);
    r->from_child = dt_xmalloc((size_t)ranks * sizeof *r->from_child);
    for (int i = 0; i < ranks; i++) r->to_child[i] = r->from_child[i] = -1;
    size_t es = kern_dtype_size(t);
    r->shm_bytes = 2 * (size_t)ranks * (max_count ? max_count : 1) * es;
    r->shm = mmap(NULL, r->shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (r->shm == MAP_FAILED) {
        r->shm = NULL;
        int rc = sys_fail(err, "mmap of the shared input/result buffers");
        kern_tcp_ring_destroy(r);
        return rc;
    }
    for (int i = 0; i < ranks; i++)
        kern_fill_gradient(t, r->shm + (size_t)i * max_count * es, max_count, 1e-2, seed, i);

    /* listeners first: every child then knows its right neighbour's port */
    int *lfd = dt_xmalloc((size_t)ranks * sizeof *lfd);
    uint16_t *port = dt_xmalloc((size_t)ranks * sizeof *port);
    int rc = DT_OK;
    for (int i = 0; i < ranks; i++) lfd[i] = -1;
    for (int i = 0; i < ranks && rc == DT_OK; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        lfd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd[i] < 0 || bind(lfd[i], (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd[i], 4) != 0 ||
            getsockname(lfd[i], (struct sockaddr *)&a, &al) != 0)
            rc = sys_fail(err, "a listening socket on 127.0.0.1");
        else
            port[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < ranks && rc == DT_OK; i++) {
        /* down: parent -> child commands, up: child -> parent replies ([1] is the writing end
         * of each, as with pipes) */
        int down[2], up[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, down) != 0) {
            rc = sys_fail(err, "socketpair");
            break;
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, up) != 0) {
            close(down[0]);
            close(down[1]);
            rc = sys_fail(err, "socketpair");
            break;
        }
        fflush(NULL); /* nothing buffered gets written twice */
        pid_t pid = fork();
        if (pid < 0) {
            close(down[0]);
            close(down[1]);
            close(up[0]);
            close(up[1]);
            rc = sys_fail(err, "fork");
            break;
        }
        if (pid == 0) {
            /* child: keep its own listener, the pipes to the parent; everything else goes */
            signal(SIGINT, SIG_IGN); /* the parent decides when the ring stops */
            close(down[1]);
            close(up[0]);
            for (int j = 0; j < i; j++) {
                close(r->to_child[j]);
                close(r->from_child[j]);
            }
            child c = {.rank = i, .n = ranks, .dtype = t, .es = es, .chunk_bytes = r->chunk_bytes,
                       .input = r->shm + (size_t)i * max_count * es,
                       .result = r->shm + ((size_t)ranks + (size_t)i) * max_count * es};
            errno = 0;
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                    .sin_port = htons(port[(i + 1) % ranks])};
            c.right = socket(AF_INET, SOCK_STREAM, 0);
            if (c.right < 0 || connect(c.right, (struct sockaddr *)&a, sizeof a) != 0) {
                fail_reply(up[1], "connect to the right neighbour");
                _exit(1);
            }
            c.left = accept(lfd[i], NULL, NULL);
            if (c.left < 0) {
                fail_reply(up[1], "accept from the left neighbour");
                _exit(1);
            }
            for (int j = 0; j < ranks; j++)
                if (lfd[j] >= 0) close(lfd[j]);
            int one = 1;
            setsockopt(c.right, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            setsockopt(c.left, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            fcntl(c.right, F_SETFL, fcntl(c.right, F_GETFL) | O_NONBLOCK);
            fcntl(c.left, F_SETFL, fcntl(c.left, F_GETFL) | O_NONBLOCK);
            tcp_reply hello = {0};
            if (write_full(up[1], &hello, sizeof hello) != 0) _exit(1);
            child_main(&c, down[0], up[1], max_count);
            _exit(0);
        }
        close(down[0]);
        close(up[1]);
        r->pid[i] = pid;
        r->to_child[i] = down[1];
        r->from_child[i] = up[0];
    }
    for (int i = 0; i < ranks; i++)
        if (lfd[i] >= 0) close(lfd[i]);
    free(lfd);
    free(port);
    /* every child reports once its two connections are up */
    for (int i = 0; i < ranks && rc == DT_OK; i++) {
        tcp_reply rep;
        if (read_full(r->from_child[i], &rep, sizeof rep) != 0) {
            rc = dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "tcp ring: rank %d did not start", i);
        } else if (rep.status) {
            errno = rep.status;
            rc = dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "tcp ring: rank %d: %s failed: %s", i,
                              rep.what, strerror(rep.status));
        }
    }
    if (rc != DT_OK) {
        kern_tcp_ring_destroy(r);
        return rc;
    }
    *out = r;
    return DT_OK;
}

static int broadcast_cmd(kern_tcp_ring *r, int cmd, size_t count, double *t_last, dt_error *err)
{
    tcp_cmd c = {.cmd = cmd, .count = count};
    for (int i = 0; i < r->n; i++)
        if (write_full(r->to_child[i], &c, sizeof c) != 0)
            return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "tcp ring: rank %d is gone", i);
    double last = 0;
    int rc = DT_OK;
    for (int i = 0; i < r->n; i++) {
        tcp_reply rep;
        if (read_full(r->from_child[i], &rep, sizeof rep) != 0) {
            if (rc == DT_OK) rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "tcp ring: rank %d died", i);
            continue;
        }
        if (rep.status && rc == DT_OK)
            rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "tcp ring: rank %d: %s failed: %s", i, rep.what,
                              strerror(rep.status));
        if (rep.t_end > last) last = rep.t_end;
    }
    if (t_last) *t_last = last;
    return rc;
}

int kern_tcp_ring_allreduce(kern_tcp_ring *r, size_t count, double *seconds, dt_error *err)
{
    if (count > r->max_count)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "tcp ring: %zu elements exceed the %zu it was made for", count,
                            r->max_count);
    int rc = broadcast_cmd(r, CMD_PREP, count, NULL, err);
    if (rc) return rc;
    double t0 = mono_s(), t1 = 0;
    rc = broadcast_cmd(r, CMD_GO, count, &t1, err);
    if (rc) return rc;
    *seconds = t1 - t0;
    return DT_OK;
}

int kern_tcp_ring_verify(kern_tcp_ring *r, size_t count, dt_error *err)
{
    if (count > r->max_count)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "tcp ring: %zu elements exceed the %zu it was made for", count,
                            r->max_count);
    int rc = broadcast_cmd(r, CMD_PREP, count, NULL, err);
    if (!rc) rc = broadcast_cmd(r, CMD_GO_VERIFY, count, NULL, err);
    if (rc) return rc;
    size_t es = kern_dtype_size(r->dtype);
    const void **in = dt_xmalloc((size_t)r->n * sizeof *in);
    for (int i = 0; i < r->n; i++) in[i] = r->shm + (size_t)i * r->max_count * es;
    unsigned char *ref = dt_xmalloc(count * es + 1);
    kern_allreduce_reference(r->dtype, (const void *const *)in, r->n, count, ref);
    for (int i = 0; i < r->n && rc == DT_OK; i++) {
        const unsigned char *res = r->shm + ((size_t)r->n + (size_t)i) * r->max_count * es;
        if (memcmp(res, ref, count * es) != 0) {
            size_t e = 0;
            while (e < count && !memcmp(res + e * es, ref + e * es, es)) e++;
            rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL,
                              "tcp ring all-reduce verification failed: rank %d differs from the reference at "
                              "element %zu of %zu",
                              i, e, count);
        }
    }
    free(ref);
    free(in);
    return rc;
}
