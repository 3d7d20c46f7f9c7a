/* The driver of the twins program (tests/global_links.rs). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
int64_t ext_scale(int64_t x) { return x * 5 + 1; }
extern int64_t mix_a(int64_t), mix_c(int64_t);
extern int64_t wide_a(int64_t, int64_t), wide_b(int64_t, int64_t), wide_c(int64_t, int64_t);
extern int64_t nan_a(int64_t, int64_t), nan_b(int64_t, int64_t), nan_c(int64_t, int64_t);
extern int64_t nan_pa(int64_t, int64_t), nan_pb(int64_t, int64_t);
int main(void) {
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 20; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int64_t v = (int64_t) x;
        printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", mix_a(v),
               mix_c(v), wide_a(v, i), wide_b(v, 7), wide_c(v, -i));
    }
    /* A quiet NaN with a payload, and an ordinary number: the payload shows whether NaNs are
       canonicalized. */
    int64_t nan = 0x7ff8000000000123, one = 0x3ff0000000000000;
    printf("%" PRIx64 " %" PRIx64 " %" PRIx64 "\n", nan_a(nan, one), nan_b(nan, one),
           nan_c(nan, one));
    printf("%" PRIx64 " %" PRIx64 " %" PRIx64 "\n", nan_a(one, one), nan_b(one, one),
           nan_c(one, one));
    printf("%" PRIx64 " %" PRIx64 "\n", nan_pa(nan, one), nan_pb(nan, one));
    return 0;
}
