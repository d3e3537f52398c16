/* The session runtime's lifecycle suite (lifecycle.h) on the e2b provider against the E2B
 * loopback fake (tests/fakes/e2b_fake.c). */
#define LIFECYCLE_SUITE core_session_e2b
#define LIFECYCLE_FAKE  TS_FAKE_E2B
#include "session/lifecycle.h"
