/* The last error is per thread: many threads setting it at once never see each other's. */
#include <pthread.h>
#include <stdio.h>

#include "core/error.h"
#include "support/tap.h"

#define THREADS 8
#define ROUNDS 20000

static void *hammer(void *arg)
{
    long id = (long)arg;
    char want[32];
    int i;

    snprintf(want, sizeof(want), "thread %ld", id);
    for (i = 0; i < ROUNDS; i++) {
        core_error_set(EVOLVE_EINVAL, "thread %ld", id);
        if (strcmp(evolve_error_last()->message, want))
            return (void *)1;
    }
    return NULL;
}

TAP_TEST(last_error_never_crosses_threads)
{
    pthread_t t[THREADS];
    long i;
    void *res;
    int bad = 0;

    for (i = 0; i < THREADS; i++)
        TAP_CHECK(pthread_create(&t[i], NULL, hammer, (void *)i) == 0, "pthread_create");
    for (i = 0; i < THREADS; i++) {
        pthread_join(t[i], &res);
        bad += res != NULL;
    }
    TAP_CHECK(bad == 0, "%d threads saw a foreign message", bad);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {TAP_CASE(last_error_never_crosses_threads), {0}};
    return tap_run(cases, argc, argv);
}
