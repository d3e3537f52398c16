/* headertest.c — proves the public header is self-contained pedantic C11. */
#include <evolve/evolve.h>

int main(void)
{
    return evolve_strerror(EVOLVE_EINVAL) == 0;
}
