/* evolve/common.h — export macros, C++ guards and the error codes shared by every evolve header.
 * Ownership: nothing here allocates. */
#ifndef EVOLVE_COMMON_H
#define EVOLVE_COMMON_H

#ifdef __cplusplus
#define EVOLVE_BEGIN_DECL extern "C" {
#define EVOLVE_END_DECL }
#else
#define EVOLVE_BEGIN_DECL
#define EVOLVE_END_DECL
#endif

#if defined(EVOLVE_BUILDING) && defined(__GNUC__)
#define EVOLVE_API __attribute__((visibility("default")))
#else
#define EVOLVE_API
#endif

EVOLVE_BEGIN_DECL

/* One list generates the enum and evolve_strerror()'s text, so they cannot drift apart.
 * Only failures a caller branches on get their own code; everything else is EVOLVE_ERROR. */
#define EVOLVE_ERRNO_MAP(X)                                                                        \
    X(ERROR, -1, "generic error")                                                                  \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EINVAL, -3, "invalid argument or input")                                                     \
    X(EBUSY, -4, "an operation is already active")                                                 \
    X(ENOTFOUND, -5, "not found")                                                                  \
    X(EEXISTS, -6, "already exists")                                                               \
    X(EIO, -7, "input/output error")                                                               \
    X(ETIMEDOUT, -8, "timed out")                                                                  \
    X(ECANCELED, -9, "canceled")                                                                   \
    X(EPROTO, -10, "unexpected reply from a peer")                                                 \
    X(ECORRUPT, -11, "stored data failed verification")                                            \
    X(EUNSAFE, -12, "path escapes its destination")                                                \
    X(EUNSUPPORTED, -13, "not supported")                                                          \
    X(ESHUTDOWN, -14, "runtime is shutting down")                                                  \
    X(EUSER, -15, "a user callback returned an error")

typedef enum evolve_error_code {
    EVOLVE_OK = 0,
#define EVOLVE_ERRNO_ENUM(name, value, text) EVOLVE_##name = (value),
    EVOLVE_ERRNO_MAP(EVOLVE_ERRNO_ENUM)
#undef EVOLVE_ERRNO_ENUM
} evolve_error_code_t;

/** The last error of the calling thread. */
typedef struct evolve_error {
    int code;            /**< an evolve_error_code_t */
    const char *message; /**< one line naming the input at fault; never NULL */
} evolve_error_t;

/** The last error set on this thread by an evolve call. Never NULL; borrowed, valid until the
 *  next evolve call on this thread.
 *  @thread any (thread-local) */
EVOLVE_API const evolve_error_t *evolve_error_last(void);

/** Forget this thread's last error. @thread any */
EVOLVE_API void evolve_error_clear(void);

/** Static text for an error code; "unknown error" for codes evolve does not define.
 *  @thread any */
EVOLVE_API const char *evolve_strerror(int code);

/** The library version, "MAJOR.MINOR.PATCH". @thread any */
EVOLVE_API const char *evolve_version(void);

EVOLVE_END_DECL

#endif
