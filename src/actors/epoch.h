/* actors/epoch.h — a minimal epoch scheme for read-mostly pointers (the bus's subscriber list):
 * readers enter and exit without locks or per-thread registration; a writer that swapped the
 * pointer waits until no reader can still hold the old value. */
#ifndef EVOLVE_ACTORS_EPOCH_H
#define EVOLVE_ACTORS_EPOCH_H

#include <stdatomic.h>

struct act_epoch {
    atomic_ullong gen;      /* bumped by every synchronize */
    atomic_long readers[2]; /* readers per generation parity */
};

/* Zero-initialised is ready. Enter a read section; pass the result to act_epoch_exit. Sections
 * must be short and never block (writers spin on them). @thread any */
int act_epoch_enter(struct act_epoch *e);
void act_epoch_exit(struct act_epoch *e, int slot);

/* After publishing a new pointer with a seq_cst store/exchange: returns once every read section
 * that could have seen the old pointer has exited. Writers must be serialised by the caller.
 * @thread any, never inside a read section */
void act_epoch_synchronize(struct act_epoch *e);

#endif
