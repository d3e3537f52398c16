/* io/proc.h — child processes on the reactor: spawn with argv/envp/cwd into their own process
 * group, stream stdout/stderr, feed stdin, watch the exit through a pidfd, signal the group.
 *
 * Callback contract. on_stdout, on_stderr and on_exit run ON THE REACTOR THREAD and must be short
 * and non-blocking (copy, post to a mailbox, return). Ordering for one process: the chunks of one
 * stream arrive in the order the child wrote them (stdout and stderr are separate pipes, so their
 * relative order is not kept); on_exit comes exactly once and LAST: after the child was reaped
 * and both pipes were read to EOF or, for pipes still held open by a grandchild, drained of
 * everything readable at that moment. Nothing is called after on_exit. While output is paused the
 * exit report waits for the resume. When io_proc_spawn returns < 0 no callback is ever called.
 *
 * Ownership. io_proc_spawn copies nothing it needs later (the child has its own argv/envp). The
 * handle is the caller's reference, dropped with io_proc_release; the process is not killed by
 * it and the callbacks still run until on_exit, so payload must live until on_exit.
 *
 * Descriptors. Every fd evolve opens is close-on-exec, and the child also closes every fd >= 3
 * before exec (posix_spawn closefrom), so nothing leaks into children. Nothing else in the process
 * may reap our children (no SIGCHLD SIG_IGN, no waitpid(-1)): the pidfd must stay valid. */
#ifndef EVOLVE_IO_PROC_H
#define EVOLVE_IO_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/reactor.h"

struct io_proc;

struct io_proc_spec {
    const char *const *argv; /* NULL-terminated; argv[0] without '/' is searched in this
                                process's PATH (posix_spawnp) */
    const char *const *envp; /* the child's full environment; NULL = this process's environ */
    const char *cwd;         /* NULL = this process's working directory */
    bool stdin_pipe;         /* true: a pipe fed by io_proc_write_stdin; false: /dev/null */
    bool same_process_group; /* false (default): the child leads a new process group */
};

struct io_proc_exit {
    int error;     /* 0, or EVOLVE_ESHUTDOWN when the reactor stopped and killed the group */
    int exit_code; /* the exit status (>= 0) or -signal when a signal ended the child */
    pid_t pid;
    uint64_t stdout_bytes, stderr_bytes; /* everything delivered */
};

struct io_proc_callbacks {
    void (*on_stdout)(const char *data, size_t len, void *payload); /* may be NULL */
    void (*on_stderr)(const char *data, size_t len, void *payload); /* may be NULL */
    void (*on_exit)(const struct io_proc_exit *ex, void *payload);  /* required */
};

/* Starts the child now, on the calling thread, then hands its pipes and pidfd to the reactor.
 * @param[out] out  the caller's handle (io_proc_release); may be NULL
 * @return 0, EVOLVE_EINVAL (no argv[0], no on_exit), EVOLVE_ENOTFOUND (program or cwd not
 *         found), EVOLVE_ESHUTDOWN, EVOLVE_ENOMEM or EVOLVE_ERROR (spawn failed otherwise).
 * @thread any */
int io_proc_spawn(struct io_proc **out, struct io_reactor *r, const struct io_proc_spec *spec,
                  const struct io_proc_callbacks *cbs, void *payload);

/* The child's pid (also its process group id unless same_process_group). @thread any */
pid_t io_proc_pid(const struct io_proc *p);

/* Sends sig to the child's process group (or to the child alone with same_process_group), on the
 * reactor, unless the child has already been reaped. @return 0, EVOLVE_ENOMEM or
 * EVOLVE_ESHUTDOWN. @thread any */
int io_proc_signal(struct io_proc *p, int sig);

/* Queues bytes (copied) for the child's stdin; they are written in order as the pipe accepts
 * them. Bytes queued after the child closed its end are dropped. @return 0, EVOLVE_EINVAL (no
 * stdin pipe), EVOLVE_ENOMEM or EVOLVE_ESHUTDOWN. @thread any */
int io_proc_write_stdin(struct io_proc *p, const void *data, size_t len);

/* Closes stdin once everything queued before it is written. @return as above. @thread any */
int io_proc_close_stdin(struct io_proc *p);

/* Stops (resumes) reading stdout and stderr: the pipes fill up and the child blocks in write, so
 * backpressure reaches it. @return 0, EVOLVE_ENOMEM or EVOLVE_ESHUTDOWN. @thread any */
int io_proc_pause_output(struct io_proc *p);
int io_proc_resume_output(struct io_proc *p);

/* Drops the caller's reference (see Ownership). NULL is a no-op. @thread any */
void io_proc_release(struct io_proc *p);

#endif
