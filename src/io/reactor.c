/* reactor.c — the reactor thread: one loop over epoll, a timer heap and the inbox.
 *
 * One iteration, in this order:
 *   1. timers        run every timer already due when the stage starts (a min-heap ordered by
 *                    deadline, then creation), then arm the timerfd for the next deadline
 *   2. epoll_wait    block until a watched fd is ready (no blocking when a timer is due)
 *   3. curl          every ready curl socket: its watch (io/http.c) calls
 *                    curl_multi_socket_action and completes finished transfers
 *   4. pipes/pidfds  every ready child pipe and pidfd: io/proc.c reads output, reaps children
 *   5. inbox         run the functions other threads posted (oldest first per poster)
 * then the loop checks whether io_reactor_free has begun; if so it drains the inbox one last
 * time, runs the modules' stop hooks (which complete everything outstanding with
 * EVOLVE_ESHUTDOWN) and exits.
 *
 * Owns: the thread, the epoll fd, the eventfd (wake-ups), the timerfd, timer and watch memory,
 *       the inbox. Does not own: curl state (io/http.c), child processes (io/proc.c).
 * Threads: io_reactor_new/free/post/on_thread and io_now_ms from any thread; every other
 *       function only on the reactor thread (asserted).
 * Ordering: posts from one thread run in the order posted; watches of one stage are dispatched
 *       in the order epoll reported them; a watch unwatched during an iteration is freed at its
 *       end, so a stale event for it is skipped, never dispatched to freed memory. */
#include "io/reactor.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"
#include "evolve/common.h"

#define MAX_EVENTS 256

struct post_node {
    struct post_node *next;
    io_post_fn fn;
    void *arg;
};

struct io_timer {
    uint64_t deadline_ns;
    uint64_t seq; /* creation order: breaks deadline ties, and bounds one timers stage */
    size_t idx;   /* position in the heap */
    io_timer_fn fn;
    void *arg;
};

struct io_watch {
    int fd;
    uint32_t events; /* what is wanted; 0 = paused, and then the fd is not in the epoll set at
                        all (epoll always reports EPOLLHUP/EPOLLERR, so a paused pipe whose
                        writer is gone would otherwise wake the loop forever) */
    enum io_stage stage;
    bool dead;
    io_watch_fn fn;
    void *arg;
    struct io_watch *prev, *next; /* the live list, or the dead list once unwatched */
};

struct hook {
    struct hook *next;
    io_post_fn fn;
    void *arg;
};

struct io_reactor {
    pthread_t thread;
    bool thread_started;
    int epfd, evfd, tfd;

    /* Shared with posting threads. */
    _Atomic(struct post_node *) inbox; /* a stack, newest first; the reactor takes it whole */
    atomic_int wake_pending;           /* 1 while an eventfd write is outstanding */
    atomic_int stopping;               /* set once by io_reactor_free */
    atomic_int posters;                /* io_reactor_post calls between check and push */
    atomic_ullong wakeups;             /* eventfd writes by posters (statistics only) */

    /* Reactor thread only. */
    struct io_timer **heap;
    size_t nheap, capheap;
    uint64_t timer_seq;
    uint64_t armed_ns; /* deadline the timerfd is armed for, 0 = disarmed */
    struct io_watch *live, *dead;
    struct hook *hooks;
    void *slots[IO_SLOT_COUNT];
    uint64_t rng;
};

static _Thread_local struct io_reactor *tls_reactor; /* the reactor this thread runs, if any */

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t io_now_ms(void)
{
    return now_ns() / 1000000u;
}

bool io_reactor_on_thread(const struct io_reactor *r)
{
    return tls_reactor == r;
}

uint64_t io_reactor_wakeups(const struct io_reactor *r)
{
    /* relaxed: a statistic; nothing is ordered by it. */
    return atomic_load_explicit(&((struct io_reactor *)r)->wakeups, memory_order_relaxed);
}

bool io_reactor_stopping(const struct io_reactor *r)
{
    assert(io_reactor_on_thread(r));
    return atomic_load_explicit(&((struct io_reactor *)r)->stopping, memory_order_relaxed) != 0;
}

void **io_reactor_slot(struct io_reactor *r, enum io_slot which)
{
    assert(io_reactor_on_thread(r) && which < IO_SLOT_COUNT);
    return &r->slots[which];
}

uint64_t io_reactor_random(struct io_reactor *r)
{
    assert(io_reactor_on_thread(r));
    r->rng ^= r->rng >> 12; /* xorshift64* */
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    return r->rng * 0x2545F4914F6CDD1DULL;
}

/* ---- timers: a binary min-heap on (deadline, seq) -------------------------------------------- */

static bool timer_before(const struct io_timer *a, const struct io_timer *b)
{
    return a->deadline_ns < b->deadline_ns || (a->deadline_ns == b->deadline_ns && a->seq < b->seq);
}

static void heap_place(struct io_reactor *r, struct io_timer *t, size_t i)
{
    r->heap[i] = t;
    t->idx = i;
}

static void heap_up(struct io_reactor *r, size_t i)
{
    struct io_timer *t = r->heap[i];

    while (i > 0 && timer_before(t, r->heap[(i - 1) / 2])) {
        heap_place(r, r->heap[(i - 1) / 2], i);
        i = (i - 1) / 2;
    }
    heap_place(r, t, i);
}

static void heap_down(struct io_reactor *r, size_t i)
{
    struct io_timer *t = r->heap[i];

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= r->nheap)
            break;
        if (c + 1 < r->nheap && timer_before(r->heap[c + 1], r->heap[c]))
            c++;
        if (!timer_before(r->heap[c], t))
            break;
        heap_place(r, r->heap[c], i);
        i = c;
    }
    heap_place(r, t, i);
}

static void heap_remove(struct io_reactor *r, struct io_timer *t)
{
    size_t i = t->idx;
    struct io_timer *last = r->heap[--r->nheap];

    if (i == r->nheap)
        return;
    heap_place(r, last, i);
    heap_down(r, i);
    heap_up(r, last->idx);
}

struct io_timer *io_reactor_timer(struct io_reactor *r, uint64_t ms, io_timer_fn fn, void *arg)
{
    struct io_timer *t;

    assert(io_reactor_on_thread(r));
    if (r->nheap == r->capheap) {
        size_t cap = r->capheap ? r->capheap * 2 : 16;
        struct io_timer **h = realloc(r->heap, cap * sizeof(*h));

        if (!h)
            return NULL;
        r->heap = h;
        r->capheap = cap;
    }
    t = malloc(sizeof(*t));
    if (!t)
        return NULL;
    t->deadline_ns = now_ns() + ms * 1000000u;
    t->seq = r->timer_seq++;
    t->fn = fn;
    t->arg = arg;
    r->heap[r->nheap++] = t;
    heap_up(r, r->nheap - 1);
    return t;
}

void io_reactor_timer_cancel(struct io_reactor *r, struct io_timer *t)
{
    assert(io_reactor_on_thread(r));
    if (!t)
        return;
    assert(t->idx < r->nheap && r->heap[t->idx] == t);
    heap_remove(r, t);
    free(t);
}

/* Stage 1. Runs the timers due now, but none created during this stage (seq >= gen), so a timer
 * re-arming itself with 0 ms cannot starve the loop. Returns the epoll_wait timeout: 0 when a
 * timer is already due, else -1 with the timerfd armed for the earliest deadline. */
static int run_timers(struct io_reactor *r)
{
    uint64_t now = now_ns(), gen = r->timer_seq;
    struct itimerspec its = {0};

    while (r->nheap && r->heap[0]->deadline_ns <= now && r->heap[0]->seq < gen) {
        struct io_timer *t = r->heap[0];
        io_timer_fn fn = t->fn;
        void *arg = t->arg;

        heap_remove(r, t);
        free(t); /* the handle dies when fn starts (see reactor.h) */
        fn(r, arg);
    }
    if (!r->nheap) {
        if (r->armed_ns) {
            timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL); /* disarm */
            r->armed_ns = 0;
        }
        return -1;
    }
    if (r->heap[0]->deadline_ns <= now_ns())
        return 0;
    if (r->armed_ns != r->heap[0]->deadline_ns) {
        r->armed_ns = r->heap[0]->deadline_ns;
        its.it_value.tv_sec = (time_t)(r->armed_ns / 1000000000u);
        its.it_value.tv_nsec = (long)(r->armed_ns % 1000000000u);
        if (timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
            r->armed_ns = 0;
            return 1; /* cannot arm: poll every millisecond rather than miss the deadline */
        }
    }
    return -1;
}

/* ---- watches --------------------------------------------------------------------------------- */

static void list_unlink(struct io_watch **head, struct io_watch *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        *head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

static void list_push(struct io_watch **head, struct io_watch *w)
{
    w->prev = NULL;
    w->next = *head;
    if (*head)
        (*head)->prev = w;
    *head = w;
}

struct io_watch *io_reactor_watch(struct io_reactor *r, int fd, uint32_t events,
                                  enum io_stage stage, io_watch_fn fn, void *arg)
{
    struct io_watch *w;
    struct epoll_event ev = {0};

    assert(io_reactor_on_thread(r));
    w = calloc(1, sizeof(*w));
    if (!w) {
        core_error_oom();
        return NULL;
    }
    w->fd = fd;
    w->events = events;
    w->stage = stage;
    w->fn = fn;
    w->arg = arg;
    ev.events = events;
    ev.data.ptr = w;
    if (events && epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        core_error_set(EVOLVE_ERROR, "reactor: epoll_ctl add fd %d: %s", fd, strerror(errno));
        free(w);
        return NULL;
    }
    list_push(&r->live, w);
    return w;
}

int io_reactor_watch_set(struct io_reactor *r, struct io_watch *w, uint32_t events)
{
    struct epoll_event ev = {0};

    int op;

    assert(io_reactor_on_thread(r) && !w->dead);
    if (w->events == events)
        return 0;
    op = !events ? EPOLL_CTL_DEL : !w->events ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    ev.events = events;
    ev.data.ptr = w;
    if (epoll_ctl(r->epfd, op, w->fd, &ev) < 0)
        return core_error_set(EVOLVE_ERROR, "reactor: epoll_ctl fd %d: %s", w->fd, strerror(errno));
    w->events = events;
    return 0;
}

int io_watch_fd(const struct io_watch *w)
{
    return w->fd;
}

void io_reactor_unwatch(struct io_reactor *r, struct io_watch *w)
{
    assert(io_reactor_on_thread(r));
    if (!w || w->dead)
        return;
    /* ENOENT/EBADF are fine: curl may already have closed the socket. */
    if (w->events)
        epoll_ctl(r->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    w->dead = true;
    list_unlink(&r->live, w);
    list_push(&r->dead, w);
}

static void free_watch_list(struct io_watch **head)
{
    while (*head) {
        struct io_watch *w = *head;

        *head = w->next;
        free(w);
    }
}

/* Stages 3 and 4: dispatch the ready watches of one stage. A watch paused or unwatched earlier
 * in this iteration is skipped. */
static void dispatch(struct io_reactor *r, const struct epoll_event *evs, int n,
                     enum io_stage stage)
{
    int i;

    for (i = 0; i < n; i++) {
        struct io_watch *w = evs[i].data.ptr;
        uint32_t revents;

        if (w == (void *)&r->evfd || w == (void *)&r->tfd || w->stage != stage || w->dead ||
            !w->events)
            continue;
        revents = evs[i].events & (w->events | EPOLLERR | EPOLLHUP);
        if (revents)
            w->fn(r, w, revents, w->arg);
    }
}

/* ---- the inbox ------------------------------------------------------------------------------- */

int io_reactor_post(struct io_reactor *r, io_post_fn fn, void *arg)
{
    struct post_node *node, *head;
    uint64_t one = 1;

    /* seq_cst on posters/stopping: a Dekker handshake with stop_drain(). Either this increment
     * precedes the reactor's final read of `posters` (which then waits for our push), or the
     * store of `stopping` precedes our load below and we refuse. */
    atomic_fetch_add_explicit(&r->posters, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&r->stopping, memory_order_seq_cst)) {
        atomic_fetch_sub_explicit(&r->posters, 1, memory_order_seq_cst);
        return core_error_set(EVOLVE_ESHUTDOWN, "reactor: shutting down, post refused");
    }
    node = malloc(sizeof(*node));
    if (!node) {
        atomic_fetch_sub_explicit(&r->posters, 1, memory_order_seq_cst);
        return core_error_oom();
    }
    node->fn = fn;
    node->arg = arg;
    head = atomic_load_explicit(&r->inbox, memory_order_relaxed);
    do {
        node->next = head;
        /* release: publishes *node; pairs with the acquire exchange in drain_inbox(). */
    } while (!atomic_compare_exchange_weak_explicit(&r->inbox, &head, node, memory_order_release,
                                                    memory_order_relaxed));
    /* acq_rel: the release half orders our push before it; the reactor's clearing exchange in
     * drain_inbox() reads from this RMW chain, so a reactor that clears the flag after we saw it
     * set will also see our node. Only the poster that turns the flag on writes the eventfd:
     * wake-ups coalesce. */
    if (!atomic_exchange_explicit(&r->wake_pending, 1, memory_order_acq_rel)) {
        ssize_t w = write(r->evfd, &one, sizeof(one));

        (void)w; /* EAGAIN means the counter is already non-zero: still a wake-up */
        atomic_fetch_add_explicit(&r->wakeups, 1, memory_order_relaxed); /* a statistic */
    }
    atomic_fetch_sub_explicit(&r->posters, 1, memory_order_seq_cst);
    return 0;
}

/* Stage 5: clear the wake flag first (so a post after our exchange writes the eventfd again),
 * take the whole stack, reverse it to posting order and run it. */
static void drain_inbox(struct io_reactor *r)
{
    struct post_node *list, *fifo = NULL;

    /* acq_rel: pairs with the posters' acq_rel exchange (see io_reactor_post). */
    atomic_exchange_explicit(&r->wake_pending, 0, memory_order_acq_rel);
    /* acquire: pairs with the release CAS of each push, making the nodes' contents visible. */
    list = atomic_exchange_explicit(&r->inbox, NULL, memory_order_acquire);
    while (list) {
        struct post_node *next = list->next;

        list->next = fifo;
        fifo = list;
        list = next;
    }
    while (fifo) {
        struct post_node *next = fifo->next;

        fifo->fn(r, fifo->arg);
        free(fifo);
        fifo = next;
    }
}

int io_reactor_on_stop(struct io_reactor *r, io_post_fn fn, void *arg)
{
    struct hook *h;

    assert(io_reactor_on_thread(r));
    h = malloc(sizeof(*h));
    if (!h)
        return core_error_oom();
    h->fn = fn;
    h->arg = arg;
    h->next = r->hooks;
    r->hooks = h;
    return 0;
}

/* The last steps on the reactor thread: every post that got past the stopping check is run, then
 * the stop hooks complete outstanding work, then leftovers are freed. */
static void stop_drain(struct io_reactor *r)
{
    drain_inbox(r);
    /* seq_cst: the other half of the handshake in io_reactor_post. */
    while (atomic_load_explicit(&r->posters, memory_order_seq_cst) != 0)
        sched_yield();
    drain_inbox(r);
    while (r->hooks) {
        struct hook *h = r->hooks;

        r->hooks = h->next;
        h->fn(r, h->arg);
        free(h);
    }
    drain_inbox(r); /* nothing can be there (posts now fail); kept for symmetry with free */
    while (r->nheap)
        io_reactor_timer_cancel(r, r->heap[0]);
    free_watch_list(&r->live);
    free_watch_list(&r->dead);
}

static void *reactor_main(void *arg)
{
    struct io_reactor *r = arg;
    struct epoll_event evs[MAX_EVENTS];

    tls_reactor = r;
    for (;;) {
        int timeout = run_timers(r), n, i;

        n = epoll_wait(r->epfd, evs, MAX_EVENTS, timeout);
        if (n < 0) {
            if (errno != EINTR)
                core_log_warn("reactor: epoll_wait: %s", strerror(errno));
            n = 0;
        }
        for (i = 0; i < n; i++) {
            uint64_t v;
            ssize_t got = 0;

            if (evs[i].data.ptr == (void *)&r->evfd)
                got = read(r->evfd, &v, sizeof(v)); /* reset; the inbox stage runs anyway */
            else if (evs[i].data.ptr == (void *)&r->tfd)
                got = read(r->tfd, &v, sizeof(v)); /* expirations; stage 1 checks deadlines */
            (void)got;
        }
        dispatch(r, evs, n, IO_STAGE_CURL);
        dispatch(r, evs, n, IO_STAGE_PROC);
        drain_inbox(r);
        free_watch_list(&r->dead);
        if (atomic_load_explicit(&r->stopping, memory_order_seq_cst))
            break;
    }
    stop_drain(r);
    tls_reactor = NULL;
    return NULL;
}

static int add_internal_fd(struct io_reactor *r, int fd, void *tag)
{
    struct epoll_event ev = {0};

    ev.events = EPOLLIN;
    ev.data.ptr = tag;
    return epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int io_reactor_new(struct io_reactor **out)
{
    struct io_reactor *r = calloc(1, sizeof(*r));
    sigset_t all, old;
    int rc;

    *out = NULL;
    if (!r)
        return core_error_oom();
    r->evfd = r->tfd = -1;
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    r->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (r->epfd < 0 || r->evfd < 0 || r->tfd < 0 || add_internal_fd(r, r->evfd, &r->evfd) < 0 ||
        add_internal_fd(r, r->tfd, &r->tfd) < 0) {
        rc = core_error_set(EVOLVE_ERROR, "reactor: creating epoll/eventfd/timerfd: %s",
                            strerror(errno));
        goto fail;
    }
    if (getrandom(&r->rng, sizeof(r->rng), GRND_NONBLOCK) != sizeof(r->rng))
        r->rng = now_ns();
    r->rng |= 1; /* xorshift state must not be 0 */
    /* The thread starts with every signal blocked, so no handler ever runs on it and a write to
     * a closed pipe gives EPIPE instead of killing the process (SIGPIPE stays pending there). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&r->thread, NULL, reactor_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        rc = core_error_set(EVOLVE_ERROR, "reactor: pthread_create: %s", strerror(rc));
        goto fail;
    }
    r->thread_started = true;
    *out = r;
    return 0;
fail:
    io_reactor_free(r);
    return rc;
}

void io_reactor_free(struct io_reactor *r)
{
    uint64_t one = 1;

    if (!r)
        return;
    assert(!io_reactor_on_thread(r));
    if (r->thread_started) {
        /* seq_cst: the stopping half of the handshake in io_reactor_post/stop_drain. */
        atomic_store_explicit(&r->stopping, 1, memory_order_seq_cst);
        if (write(r->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            core_log_warn("reactor: waking for stop: %s", strerror(errno));
        pthread_join(r->thread, NULL);
    }
    if (r->epfd >= 0)
        close(r->epfd);
    if (r->evfd >= 0)
        close(r->evfd);
    if (r->tfd >= 0)
        close(r->tfd);
    free(r->heap);
    free(r);
}
