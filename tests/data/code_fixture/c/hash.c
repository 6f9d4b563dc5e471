#include <stddef.h>

#define HASH_SEED 5381

struct table {
    size_t size;
};

typedef struct table table_t;

static unsigned long hash_string(const char *s) {
    unsigned long h = HASH_SEED;
    while (*s) {
        h = h * 33 + (unsigned char)*s++;
    }
    return h;
}

size_t bucket_of(table_t *t, const char *key) {
    return hash_string(key) % t->size;
}
