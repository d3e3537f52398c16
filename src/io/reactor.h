/* io/reactor.h — the I/O reactor: one thread running epoll over curl's sockets, child pipes,
 * pidfds, a timerfd and an eventfd, with an MPSC inbox as the only way in from other threads.
 *
 * Threads. Every callback the reactor (or io/http.h, io/proc.h) invokes runs ON THE REACTOR
 * THREAD. Such a callback must be short and must not block: no sleeping, no waiting on locks held
 * by slow code, no blocking I/O, no parsing of agent output. Its job is to copy what it needs and
 * post a message somewhere else (an actor mailbox), then return. A slow callback delays every
 * socket, pipe and timer of the process.
 *
 * Ownership. The reactor is created and freed by its owner (the runtime). Watches and timers are
 * reactor-internal helpers for io/http.c and io/proc.c; they are owned by the reactor and freed by
 * it (a timer after it fires or is cancelled, a watch after io_reactor_unwatch). */
#ifndef EVOLVE_IO_REACTOR_H
#define EVOLVE_IO_REACTOR_H

#include <stdbool.h>
#include <stdint.h>

struct io_reactor;
struct io_timer;
struct io_watch;

/* A function posted to the reactor. It runs once on the reactor thread. When the reactor is
 * shutting down it still runs (io_reactor_stopping() is then true) and should fail the work it
 * carries with EVOLVE_ESHUTDOWN instead of starting it. */
typedef void (*io_post_fn)(struct io_reactor *r, void *arg);

/* Creates the reactor and starts its thread. On failure nothing is left running.
 * @return 0, EVOLVE_ENOMEM or EVOLVE_ERROR (epoll/eventfd/timerfd/thread creation failed).
 * @thread any */
int io_reactor_new(struct io_reactor **out);

/* Stops the reactor: functions already posted still run (seeing io_reactor_stopping()), every
 * outstanding operation (HTTP request, process, ...) is completed once with EVOLVE_ESHUTDOWN by
 * the stop hooks, the thread is joined and the memory freed. NULL is a no-op. Posts that race with
 * free either run or return EVOLVE_ESHUTDOWN; no post may start after free has returned.
 * @thread any thread except the reactor thread (asserted) */
void io_reactor_free(struct io_reactor *r);

/* Queues fn(r, arg) to run on the reactor thread. Functions posted by one thread run in the order
 * posted; wake-ups of the reactor are coalesced (many posts, one eventfd write). On a negative
 * return fn will never run.
 * @return 0, EVOLVE_ENOMEM or EVOLVE_ESHUTDOWN (io_reactor_free has begun).
 * @thread any (also the reactor thread itself: fn then runs in a later inbox stage) */
int io_reactor_post(struct io_reactor *r, io_post_fn fn, void *arg);

/* True when called on r's reactor thread. @thread any */
bool io_reactor_on_thread(const struct io_reactor *r);

/* How many times posters wrote the eventfd: posts made while a wake-up is already pending do
 * not write it again. A statistic for tests and benchmarks. @thread any */
uint64_t io_reactor_wakeups(const struct io_reactor *r);

/* True once io_reactor_free has begun. @thread reactor */
bool io_reactor_stopping(const struct io_reactor *r);

/* CLOCK_MONOTONIC now, in milliseconds. @thread any */
uint64_t io_now_ms(void);

/* ---- timers (reactor-internal) --------------------------------------------------------------- */

typedef void (*io_timer_fn)(struct io_reactor *r, void *arg);

/* A one-shot timer firing fn(r, arg) in the timers stage, ms milliseconds from now (0 = the next
 * iteration). Timers with equal deadlines fire in creation order. The handle is valid until fn
 * starts or io_reactor_timer_cancel is called; timers still pending when the reactor stops are
 * dropped without firing (their owners' stop hooks clean up).
 * @return the timer, or NULL when out of memory. @thread reactor */
struct io_timer *io_reactor_timer(struct io_reactor *r, uint64_t ms, io_timer_fn fn, void *arg);

/* Cancels a pending timer: fn will not run. NULL is a no-op. @thread reactor */
void io_reactor_timer_cancel(struct io_reactor *r, struct io_timer *t);

/* ---- fd watches (reactor-internal) ----------------------------------------------------------- */

/* Which dispatch stage a watch belongs to: the iteration handles all ready curl sockets first,
 * then all ready pipes and pidfds (see reactor.c). */
enum io_stage { IO_STAGE_CURL = 0, IO_STAGE_PROC = 1 };

/* revents are epoll flags (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP). */
typedef void (*io_watch_fn)(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg);

/* Watches fd (not owned: the caller closes it, after io_reactor_unwatch) for `events` (EPOLLIN
 * and/or EPOLLOUT, level-triggered; 0 = paused: the fd is kept out of epoll, so not even
 * EPOLLHUP/EPOLLERR are reported until the events are set again).
 * @return the watch, or NULL with the error set (EVOLVE_ENOMEM, EVOLVE_ERROR). @thread reactor */
struct io_watch *io_reactor_watch(struct io_reactor *r, int fd, uint32_t events,
                                  enum io_stage stage, io_watch_fn fn, void *arg);

/* Changes the events of a watch. @return 0 or EVOLVE_ERROR. @thread reactor */
int io_reactor_watch_set(struct io_reactor *r, struct io_watch *w, uint32_t events);

/* The fd of a watch. @thread reactor */
int io_watch_fd(const struct io_watch *w);

/* Stops watching; the watch is freed at the end of the iteration, so events already collected
 * for it in this iteration are skipped safely. Call it before closing the fd. NULL is a no-op.
 * @thread reactor */
void io_reactor_unwatch(struct io_reactor *r, struct io_watch *w);

/* ---- stop hooks (reactor-internal) ----------------------------------------------------------- */

/* Registers fn(r, arg) to run once on the reactor thread when the reactor stops, after the inbox
 * has been drained for the last time; hooks run in reverse registration order. A module uses it
 * to complete its outstanding operations with EVOLVE_ESHUTDOWN and free its state.
 * @return 0 or EVOLVE_ENOMEM. @thread reactor */
int io_reactor_on_stop(struct io_reactor *r, io_post_fn fn, void *arg);

/* A per-reactor slot for each module's state, created lazily by that module on the reactor
 * thread. @thread reactor */
enum io_slot { IO_SLOT_HTTP = 0, IO_SLOT_PROC = 1, IO_SLOT_COUNT };
void **io_reactor_slot(struct io_reactor *r, enum io_slot which);

/* 64 pseudo-random bits from the reactor's generator (xorshift seeded from getrandom; used for
 * retry jitter). @thread reactor */
uint64_t io_reactor_random(struct io_reactor *r);

#endif
