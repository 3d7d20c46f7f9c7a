/* The driver of the three-unit global test program (tests/global.rs, tests/global_links.rs). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
typedef int64_t (*fn)(int64_t);
#define F(name) extern int64_t name(int64_t);
F(mix_a) F(mix_a2) F(mix_b) F(mix_c) F(fact_a) F(fact_b) F(even_a) F(even_b) F(odd_a) F(odd_b)
F(addr_a) F(addr_b) F(pre_a) F(pre_b) F(caller_c) F(use_helper_a) F(use_helper_b)
F(scale_a) F(scale_b) F(sum_b) F(sum_c)
extern int64_t addr_of_a(void);
extern int64_t addr_of_b(void);
int main(void) {
    fn fns[] = {mix_a, mix_a2, mix_b, mix_c, fact_a, fact_b, even_a, even_b, odd_a, odd_b,
                addr_a, addr_b, pre_a, pre_b, caller_c, use_helper_a, use_helper_b,
                scale_a, scale_b, sum_b, sum_c};
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 200; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        for (unsigned f = 0; f < sizeof fns / sizeof fns[0]; f++)
            printf("%u %" PRId64 "\n", f, fns[f]((int64_t) (x >> (i % 50))));
    }
    printf("addr_a %d\n", addr_of_a() == (int64_t) (intptr_t) addr_a);
    printf("addr_b %d\n", addr_of_b() == (int64_t) (intptr_t) addr_b);
    printf("addr_a != addr_b %d\n", addr_of_a() != addr_of_b());
    return 0;
}
