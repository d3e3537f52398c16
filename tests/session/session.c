/* The session runtime's lifecycle suite (lifecycle.h) on the local provider, or on a loopback
 * fake when EVOLVE_TEST_PROVIDER=e2b|daytona. */
#define LIFECYCLE_SUITE core_session
#define LIFECYCLE_FAKE  (-1)
#include "session/lifecycle.h"
