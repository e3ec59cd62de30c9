#include <stdio.h>
#include <leveldb/c.h> /* or <pith/c.h>: the same declarations */

static uint8_t print_key(void* state, const char* k, size_t klen,
                         const char* v, size_t vlen) {
  (void)state, (void)v, (void)vlen;
  printf("match: %.*s\n", (int)klen, k);
  return 1; /* go on */
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "/tmp/pith-example";
  char* err = NULL;
  leveldb_options_t* options = leveldb_options_create();
  leveldb_options_set_create_if_missing(options, 1);
  leveldb_t* db = leveldb_open(options, path, &err);
  if (err != NULL) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
  leveldb_readoptions_t* ro = leveldb_readoptions_create();
  leveldb_put(db, wo, "apple", 5, "red", 3, &err);
  leveldb_put(db, wo, "banana", 6, "yellow", 6, &err);
  leveldb_put(db, wo, "cherry", 6, "dark red", 8, &err);

  size_t len;
  char* value = leveldb_get(db, ro, "banana", 6, &len, &err);
  printf("banana: %.*s\n", (int)len, value);
  leveldb_free(value);

  leveldb_iterator_t* it = leveldb_create_iterator(db, ro);
  for (leveldb_iter_seek_to_last(it); leveldb_iter_valid(it); leveldb_iter_prev(it)) {
    const char* k = leveldb_iter_key(it, &len);
    printf("key: %.*s\n", (int)len, k);
  }
  leveldb_iter_destroy(it);

  /* PithDB's own: a regex over whole keys, walked through the key index */
  pith_search(db, ro, "[bc].*", 0, 0, NULL, print_key, &err);
  char* stats = pith_stats(db, &err);
  printf("stats: %.60s...\n", stats);
  leveldb_free(stats);

  if (err != NULL) {
    fprintf(stderr, "error: %s\n", err);
    leveldb_free(err);
    return 1;
  }
  leveldb_readoptions_destroy(ro);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  leveldb_destroy_db(options, path, &err);
  leveldb_options_destroy(options);
  return 0;
}
