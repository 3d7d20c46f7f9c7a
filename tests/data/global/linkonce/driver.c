/* The driver of the linkonce program (tests/global_links.rs). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
int64_t ext_scale(int64_t x) { return x * 5 + 1; }
extern int64_t use_a(int64_t), use_b(int64_t), use_c(int64_t);
int main(void) {
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 20; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int64_t v = (int64_t) x;
        printf("%" PRId64 " %" PRId64 " %" PRId64 "\n", use_a(v), use_b(v), use_c(v));
    }
    return 0;
}
