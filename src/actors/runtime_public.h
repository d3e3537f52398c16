/* actors/runtime_public.h — from the public evolve_runtime_t to the internal runtimes it owns.
 * Other modules include this to reach the actor runtime of a user's evolve_runtime_t. */
#ifndef EVOLVE_ACTORS_RUNTIME_PUBLIC_H
#define EVOLVE_ACTORS_RUNTIME_PUBLIC_H

#include "actors/actors.h"
#include "evolve/runtime.h"

/* The actor runtime inside `rt`; borrowed, valid until evolve_runtime_free(rt). @thread any */
struct act_runtime *act_runtime_of(evolve_runtime_t *rt);

#endif
