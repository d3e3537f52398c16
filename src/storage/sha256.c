/* sha256.c — SHA-256 through OpenSSL's EVP interface: incremental contexts and one-shot hex.
 * Owns: digest contexts and the hex form of ids. Threads: any (a context is used by one thread). */
#include "storage/storage.h"

#include <openssl/evp.h>
#include <stdlib.h>

#include "core/error.h"

struct sto_sha256 {
    EVP_MD_CTX *ctx;
};

int sto_sha256_new(struct sto_sha256 **out)
{
    struct sto_sha256 *h = calloc(1, sizeof(*h));

    if (!h)
        return core_error_oom();
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        sto_sha256_free(h);
        return core_error_oom();
    }
    *out = h;
    return 0;
}

int sto_sha256_update(struct sto_sha256 *h, const void *data, size_t len)
{
    if (len && EVP_DigestUpdate(h->ctx, data, len) != 1)
        return core_error_set(EVOLVE_ERROR, "sha256: digest update failed");
    return 0;
}

static void to_hex(char *hex, const unsigned char *md, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[2 * n] = '\0';
}

int sto_sha256_final_hex(struct sto_sha256 *h, char hex[STO_HEX_LEN + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (EVP_DigestFinal_ex(h->ctx, md, &n) != 1 || n != STO_HASH_LEN ||
        EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
        return core_error_set(EVOLVE_ERROR, "sha256: digest final failed");
    to_hex(hex, md, n);
    return 0;
}

void sto_sha256_free(struct sto_sha256 *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

int sto_sha256_hex(char hex[STO_HEX_LEN + 1], const void *data, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != STO_HASH_LEN)
        return core_error_set(EVOLVE_ERROR, "sha256: digest failed");
    to_hex(hex, md, n);
    return 0;
}

bool sto_is_hex_id(const char *s)
{
    size_t i;

    if (!s)
        return false;
    for (i = 0; i < STO_HEX_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[STO_HEX_LEN] == '\0';
}
