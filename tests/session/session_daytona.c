/* The session runtime's lifecycle suite (lifecycle.h) on the daytona provider against the
 * Daytona loopback fake (tests/fakes/daytona_fake.c); live output by polling. */
#define LIFECYCLE_SUITE core_session_daytona
#define LIFECYCLE_FAKE  TS_FAKE_DAYTONA
#include "session/lifecycle.h"
