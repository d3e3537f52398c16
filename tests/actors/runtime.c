/* The public runtime handle and the argument checks of the actor runtime and the bus: what a
 * caller gets back for bad input (code and a message naming the input). The concurrent
 * behaviour is tested in tests/concurrency/actors_*.c. */
#include <criterion/criterion.h>
#include <string.h>

#include "actors/actors.h"
#include "actors/bus.h"
#include "actors/runtime_public.h"
#include "evolve/evolve.h"

TestSuite(actors_runtime, .timeout = 30);

Test(actors_runtime, options_init_fills_defaults)
{
    evolve_runtime_options_t opts = {.version = 99, .worker_threads = 7};

    cr_assert_eq(evolve_runtime_options_init(&opts, EVOLVE_RUNTIME_OPTIONS_VERSION), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(opts.version, EVOLVE_RUNTIME_OPTIONS_VERSION);
    cr_assert_eq(opts.worker_threads, 0);
}

Test(actors_runtime, options_version_zero_or_newer_is_rejected_naming_the_struct)
{
    evolve_runtime_options_t opts = EVOLVE_RUNTIME_OPTIONS_INIT;
    evolve_runtime_t *rt = (evolve_runtime_t *)&opts;

    cr_assert_eq(evolve_runtime_options_init(&opts, 0), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "evolve_runtime_options_t"));
    opts.version = EVOLVE_RUNTIME_OPTIONS_VERSION + 1;
    cr_assert_eq(evolve_runtime_new(&rt, &opts), EVOLVE_EINVAL);
    cr_assert_null(rt);
    cr_assert_not_null(strstr(evolve_error_last()->message, "version 2"));
    opts.version = 0;
    cr_assert_eq(evolve_runtime_new(&rt, &opts), EVOLVE_EINVAL);
}

Test(actors_runtime, new_with_null_options_uses_one_worker_per_core)
{
    evolve_runtime_t *rt;

    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0, "%s", evolve_error_last()->message);
    cr_assert_geq(act_runtime_workers(act_runtime_of(rt)), 1);
    cr_assert(!act_runtime_on_worker(act_runtime_of(rt)));
    evolve_runtime_free(rt);
    evolve_runtime_free(NULL);
}

Test(actors_runtime, worker_threads_option_is_honoured)
{
    evolve_runtime_options_t opts = EVOLVE_RUNTIME_OPTIONS_INIT;
    evolve_runtime_t *rt;

    opts.worker_threads = 3;
    cr_assert_eq(evolve_runtime_new(&rt, &opts), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(act_runtime_workers(act_runtime_of(rt)), 3);
    evolve_runtime_free(rt);
}

Test(actors_runtime, absurd_worker_count_is_rejected)
{
    struct act_runtime_config cfg = {.worker_threads = 100000};
    struct act_runtime *rt;

    cr_assert_eq(act_runtime_new(&rt, &cfg), EVOLVE_EINVAL);
    cr_assert_null(rt);
    cr_assert_not_null(strstr(evolve_error_last()->message, "worker_threads"));
}

Test(actors_runtime, cancel_of_unknown_timer_is_not_found)
{
    struct act_runtime *rt;

    cr_assert_eq(act_runtime_new(&rt, NULL), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(act_timer_cancel(rt, 12345), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "timer 12345"));
    act_runtime_free(rt);
}

static void nop_cb(struct act_event *ev, uint64_t gap, void *payload)
{
    (void)ev;
    (void)gap;
    (void)payload;
}

Test(actors_runtime, bus_rejects_bad_subscriptions)
{
    struct act_sub_config cb_cfg = {.cb = nop_cb};
    struct act_sub_config huge = {.capacity = 1u << 30};
    struct act_bus *bus;
    struct act_sub *sub;

    cr_assert_eq(act_bus_new(&bus, NULL), 0);
    cr_assert_eq(act_bus_subscribe(&sub, bus, &cb_cfg), EVOLVE_EINVAL);
    cr_assert_null(sub);
    cr_assert_not_null(strstr(evolve_error_last()->message, "runtime"));
    cr_assert_eq(act_bus_subscribe(&sub, bus, &huge), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "capacity"));
    act_bus_free(bus);
}

Test(actors_runtime, poll_on_a_callback_subscriber_is_invalid)
{
    struct act_sub_config cb_cfg = {.cb = nop_cb};
    struct act_runtime *rt;
    struct act_bus *bus;
    struct act_sub *sub;
    struct act_event *ev;
    uint64_t gap;

    cr_assert_eq(act_runtime_new(&rt, NULL), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(act_bus_new(&bus, rt), 0);
    cr_assert_eq(act_bus_subscribe(&sub, bus, &cb_cfg), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(act_sub_poll(sub, 0, &ev, &gap), EVOLVE_EINVAL);
    cr_assert_null(ev);
    act_bus_unsubscribe(sub);
    act_runtime_free(rt);
    act_bus_free(bus);
}

Test(actors_runtime, publishing_without_subscribers_keeps_the_event)
{
    struct act_bus *bus;
    struct act_event ev;
    uint64_t resume = 0;

    act_event_init(&ev, NULL, 1);
    cr_assert_eq(act_bus_new(&bus, NULL), 0);
    cr_assert_eq(act_bus_publish(bus, &ev), 0);
    cr_assert_eq(act_bus_try_publish(bus, &ev, &resume, NULL, NULL), 0);
    cr_assert_eq(atomic_load(&ev.refs), 1);
    act_bus_free(bus);
}
