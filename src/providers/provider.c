/* provider.c — what every provider shares: vtable checking and the result destructors.
 * Owns: prov_init's version/completeness check, freeing op results, reading exit records.
 * Threads: any; no shared state. */
#include "providers/provider.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

int prov_init(struct prov *p, const struct prov_ops *ops, const struct prov_env *env)
{
    const char *name = ops && ops->name ? ops->name : "(unnamed)";
    const char *missing = NULL;

    if (!p || !ops)
        return core_error_set(EVOLVE_EINVAL, "provider %s: no vtable", name);
    if (ops->version == 0 || ops->version > PROV_OPS_VERSION)
        return core_error_set(EVOLVE_EINVAL,
                              "provider %s: prov_ops version %u (this build knows %d)", name,
                              ops->version, PROV_OPS_VERSION);
    if (!ops->name)
        missing = "name";
    else if (!ops->free)
        missing = "free";
    else if (!ops->create || !ops->connect || !ops->kill || !ops->list || !ops->exec)
        missing = "create/connect/kill/list/exec";
    else if (!ops->pause || !ops->resume || !ops->signal)
        missing = "pause/resume/signal";
    else if (!ops->write_file || !ops->read_file || !ops->list_dir || !ops->get_host ||
             !ops->box_free)
        missing = "write_file/read_file/list_dir/get_host/box_free";
    if (missing)
        return core_error_set(EVOLVE_EINVAL, "provider %s: prov_ops lacks %s", name, missing);
    p->ops = ops;
    if (env)
        p->env = *env;
    else
        memset(&p->env, 0, sizeof(p->env));
    return 0;
}

void prov_proc_free(struct prov_proc *proc)
{
    int *fds[4];
    int i;

    if (!proc)
        return;
    fds[0] = &proc->stdin_fd;
    fds[1] = &proc->stdout_fd;
    fds[2] = &proc->stderr_fd;
    fds[3] = &proc->status_fd;
    for (i = 0; i < 4; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(proc);
}

void prov_list_free(struct prov_list *list)
{
    if (!list)
        return;
    free(list->items);
    free(list);
}

void prov_dir_free(struct prov_dir *dir)
{
    size_t i;

    if (!dir)
        return;
    for (i = 0; i < dir->count; i++)
        free(dir->items[i].name);
    free(dir->items);
    free(dir);
}

void prov_buf_free(struct prov_buf *buf)
{
    if (!buf)
        return;
    free(buf->data);
    free(buf);
}

int prov_exit_read(int status_fd, struct prov_exit *out)
{
    size_t off = 0;
    unsigned char *p = (unsigned char *)out;

    while (off < sizeof(*out)) {
        ssize_t n = read(status_fd, p + off, sizeof(*out) - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return core_error_set(EVOLVE_EIO, "status descriptor %d ended without an exit record",
                                  status_fd);
        off += (size_t)n;
    }
    return 0;
}
