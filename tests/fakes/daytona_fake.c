/* daytona_fake.c — placeholder replaced below. */
#include "fakes/fake_int.h"

enum MHD_Result fake_daytona_handle(struct freq *r)
{
    return fake_reply(r, 501, NULL, "{}", 2);
}
