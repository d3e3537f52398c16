/* evolve/evolve.h — the whole public API of libevolve: include this one header.
 * Conventions (see HACKING.md): functions return 0 or a negative EVOLVE_E* code and
 * evolve_error_last() explains it; handles are opaque, created by _new() and released by _free();
 * options structs start with a version field and NULL means defaults. */
#ifndef EVOLVE_EVOLVE_H
#define EVOLVE_EVOLVE_H

#include "evolve/common.h"
#include "evolve/event.h"
#include "evolve/autohand.h"
#include "evolve/runtime.h"
#include "evolve/session.h"
#include "evolve/batch.h"
#include "evolve/storage.h"

#endif
