/* c_api_test.c: calls every function of libpith's C API (LevelDB 1.23's
 * c.h and PithDB's pith_ additions) and checks what each returns.
 *
 * Run by tests/c_api.rs, linked against libpith.so and, under
 * AddressSanitizer, against libpith.a: every buffer the library returns
 * is freed here, so a leak report means the library leaked.
 *
 * Usage: c_api_test DIR   (DIR: an empty scratch directory) */

#include "leveldb/c.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int checks = 0;

#define CHECK(cond)                                                        \
  do {                                                                     \
    checks++;                                                              \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,     \
              #cond);                                                      \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

#define CHECK_NO_ERROR(err)                                                \
  do {                                                                     \
    checks++;                                                              \
    if ((err) != NULL) {                                                   \
      fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, __LINE__, \
              (err));                                                      \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* Takes the error out of *err, checking it holds `part`. */
static void expect_error(char** err, const char* part, int line) {
  checks++;
  if (*err == NULL) {
    fprintf(stderr, "line %d: expected an error containing \"%s\"\n", line,
            part);
    exit(1);
  }
  if (strstr(*err, part) == NULL) {
    fprintf(stderr, "line %d: error \"%s\" lacks \"%s\"\n", line, *err, part);
    exit(1);
  }
  if (getenv("C_API_TEST_VERBOSE") != NULL)
    fprintf(stderr, "line %d: expected error: %s\n", line, *err);
  leveldb_free(*err);
  *err = NULL;
}
#define EXPECT_ERROR(err, part) expect_error(&(err), (part), __LINE__)

static void check_get(leveldb_t* db, const leveldb_readoptions_t* ro,
                      const char* key, const char* expected, int line) {
  char* err = NULL;
  size_t len = 12345;
  char* v = leveldb_get(db, ro, key, strlen(key), &len, &err);
  checks++;
  if (err != NULL) {
    fprintf(stderr, "line %d: get %s: %s\n", line, key, err);
    exit(1);
  }
  if (expected == NULL) {
    if (v != NULL || len != 0) {
      fprintf(stderr, "line %d: get %s: expected missing\n", line, key);
      exit(1);
    }
    return;
  }
  if (v == NULL || len != strlen(expected) || memcmp(v, expected, len) != 0) {
    fprintf(stderr, "line %d: get %s: expected \"%s\", got \"%.*s\"\n", line,
            key, expected, (int)len, v ? v : "(null)");
    exit(1);
  }
  leveldb_free(v);
}
#define CHECK_GET(db, ro, k, v) check_get((db), (ro), (k), (v), __LINE__)

static void check_iter(leveldb_iterator_t* it, const char* key,
                       const char* val, int line) {
  size_t len;
  const char* p;
  checks++;
  if (!leveldb_iter_valid(it)) {
    fprintf(stderr, "line %d: iterator not valid, expected %s\n", line, key);
    exit(1);
  }
  p = leveldb_iter_key(it, &len);
  if (len != strlen(key) || memcmp(p, key, len) != 0) {
    fprintf(stderr, "line %d: key \"%.*s\", expected %s\n", line, (int)len, p,
            key);
    exit(1);
  }
  p = leveldb_iter_value(it, &len);
  if (len != strlen(val) || memcmp(p, val, len) != 0) {
    fprintf(stderr, "line %d: value \"%.*s\", expected %s\n", line, (int)len,
            p, val);
    exit(1);
  }
}
#define CHECK_ITER(it, k, v) check_iter((it), (k), (v), __LINE__)

/* ---- write batch iteration ---- */

struct batch_log {
  char text[256];
};

static void log_put(void* state, const char* k, size_t klen, const char* v,
                    size_t vlen) {
  struct batch_log* log = (struct batch_log*)state;
  size_t n = strlen(log->text);
  snprintf(log->text + n, sizeof(log->text) - n, "put(%.*s,%.*s);", (int)klen,
           k, (int)vlen, v);
}

static void log_delete(void* state, const char* k, size_t klen) {
  struct batch_log* log = (struct batch_log*)state;
  size_t n = strlen(log->text);
  snprintf(log->text + n, sizeof(log->text) - n, "del(%.*s);", (int)klen, k);
}

/* ---- comparators and filter policies ---- */

static int destructor_calls = 0;
static int compare_calls = 0;

static void count_destructor(void* state) {
  (void)state;
  destructor_calls++;
}

static int bytewise_compare(void* state, const char* a, size_t alen,
                            const char* b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int r = memcmp(a, b, n);
  (void)state;
  compare_calls++;
  if (r == 0) {
    if (alen < blen) r = -1;
    else if (alen > blen) r = +1;
  }
  return r;
}

static int reverse_compare(void* state, const char* a, size_t alen,
                           const char* b, size_t blen) {
  return -bytewise_compare(state, a, alen, b, blen);
}

/* Agrees with byte order except between two keys that both start with
 * "zz", which it ranks the other way round: open's probe cannot see it,
 * the keys a program writes and reads do. */
static int sneaky_compare(void* state, const char* a, size_t alen,
                          const char* b, size_t blen) {
  int r = bytewise_compare(state, a, alen, b, blen);
  if (alen >= 2 && blen >= 2 && memcmp(a, "zz", 2) == 0 &&
      memcmp(b, "zz", 2) == 0)
    return -r;
  return r;
}

static const char* sneaky_name(void* state) {
  (void)state;
  return "test.sneaky";
}

static const char* bytewise_name(void* state) {
  (void)state;
  return "test.bytewise";
}

static const char* reverse_name(void* state) {
  (void)state;
  return "test.reverse";
}

static char* never_create_filter(void* state, const char* const* keys,
                                 const size_t* lens, int n, size_t* flen) {
  (void)state; (void)keys; (void)lens; (void)n;
  *flen = 4;
  return strdup("fake");
}

static uint8_t never_match(void* state, const char* key, size_t len,
                           const char* filter, size_t flen) {
  (void)state; (void)key; (void)len; (void)filter; (void)flen;
  return 0; /* would hide every key if it were used */
}

static const char* filter_name(void* state) {
  (void)state;
  return "test.nomatch";
}

/* ---- search callbacks ---- */

struct search_log {
  int matches;
  int with_values;
  int stop_after;
  char last_key[64];
};

static uint8_t on_match(void* state, const char* k, size_t klen,
                        const char* v, size_t vlen) {
  struct search_log* s = (struct search_log*)state;
  s->matches++;
  if (v != NULL && vlen > 0) s->with_values++;
  snprintf(s->last_key, sizeof(s->last_key), "%.*s", (int)klen, k);
  return s->stop_after == 0 || s->matches < s->stop_after;
}

/* ---- threads sharing one handle ---- */

struct worker {
  leveldb_t* db;
  int id;
  int failures;
};

static void* work(void* arg) {
  struct worker* w = (struct worker*)arg;
  leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
  leveldb_readoptions_t* ro = leveldb_readoptions_create();
  int i;
  for (i = 0; i < 300; i++) {
    char key[32], val[32];
    char* err = NULL;
    char* got;
    size_t len;
    snprintf(key, sizeof(key), "t%d-%05d", w->id, i);
    snprintf(val, sizeof(val), "v%d-%d", w->id, i);
    leveldb_put(w->db, wo, key, strlen(key), val, strlen(val), &err);
    if (err != NULL) {
      w->failures++;
      leveldb_free(err);
      err = NULL;
    }
    got = leveldb_get(w->db, ro, key, strlen(key), &len, &err);
    if (err != NULL || got == NULL || len != strlen(val) ||
        memcmp(got, val, len) != 0)
      w->failures++;
    leveldb_free(got);
    leveldb_free(err);
  }
  leveldb_readoptions_destroy(ro);
  leveldb_writeoptions_destroy(wo);
  return NULL;
}

/* Flips bytes in the middle of the first segment file in `dir`; returns
 * 1 when there was one. */
static int corrupt_a_segment(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* e;
  int done = 0;
  if (d == NULL) return 0;
  while (!done && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    char path[1024];
    FILE* f;
    long size, at;
    if (n < 4 || strcmp(e->d_name + n - 4, ".seg") != 0) continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    f = fopen(path, "r+b");
    if (f == NULL) continue;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    for (at = size / 3; at < size / 3 + 64 && at < size; at++) {
      int c;
      fseek(f, at, SEEK_SET);
      c = fgetc(f);
      fseek(f, at, SEEK_SET);
      fputc(c ^ 0x5a, f);
    }
    fclose(f);
    done = 1;
  }
  closedir(d);
  return done;
}

static int dir_exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int main(int argc, char** argv) {
  char dbname[512], dbname2[512], dbname3[512];
  char* err = NULL;
  char* prop;
  leveldb_t* db;
  leveldb_env_t* env;
  leveldb_cache_t* cache;
  leveldb_options_t* options;
  leveldb_readoptions_t* roptions;
  leveldb_writeoptions_t* woptions;
  leveldb_writebatch_t* wb;
  leveldb_writebatch_t* wb2;
  leveldb_iterator_t* iter;
  const leveldb_snapshot_t* snap;
  leveldb_comparator_t* cmp;
  leveldb_comparator_t* bad_cmp;
  leveldb_filterpolicy_t* bloom;
  leveldb_filterpolicy_t* custom_policy;
  struct batch_log blog;
  struct search_log slog;
  size_t len;
  int i;

  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  snprintf(dbname, sizeof(dbname), "%s/db", argv[1]);
  snprintf(dbname2, sizeof(dbname2), "%s/db-comparator", argv[1]);
  snprintf(dbname3, sizeof(dbname3), "%s/db-filter", argv[1]);

  /* versions */
  CHECK(leveldb_major_version() == 1);
  CHECK(leveldb_minor_version() == 23);
  CHECK(strlen(pith_version()) > 0);

  /* env, cache */
  env = leveldb_create_default_env();
  CHECK(env != NULL);
  prop = leveldb_env_get_test_directory(env);
  CHECK(prop != NULL && dir_exists(prop));
  leveldb_free(prop);
  cache = leveldb_cache_create_lru(1 << 20);
  CHECK(cache != NULL);

  /* options: every setter */
  options = leveldb_options_create();
  leveldb_options_set_error_if_exists(options, 1);
  leveldb_options_set_cache(options, cache);
  leveldb_options_set_env(options, env);
  leveldb_options_set_info_log(options, NULL);
  leveldb_options_set_write_buffer_size(options, 64 << 10);
  leveldb_options_set_paranoid_checks(options, 1);
  leveldb_options_set_max_open_files(options, 10);
  leveldb_options_set_block_size(options, 1024);
  leveldb_options_set_block_restart_interval(options, 8);
  leveldb_options_set_max_file_size(options, 3 << 20);
  leveldb_options_set_compression(options, leveldb_no_compression);

  roptions = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(roptions, 1);
  leveldb_readoptions_set_fill_cache(roptions, 0);

  woptions = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(woptions, 1);

  /* destroy of a missing database is fine */
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);

  /* open: missing database without create_if_missing fails; a second
   * failure replaces (and frees) the first message */
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  CHECK(err != NULL);
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  EXPECT_ERROR(err, "Invalid argument");

  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  CHECK(db != NULL);

  /* a second handle on the same directory is refused */
  CHECK(leveldb_open(options, dbname, &err) == NULL);
  CHECK(err != NULL);
  leveldb_free(err);
  err = NULL;

  /* put / get; an error slot holding a message is untouched on success */
  err = strdup("an earlier message");
  {
    char* before = err;
    leveldb_put(db, woptions, "foo", 3, "hello", 5, &err);
    CHECK(err == before);
    free(err);
    err = NULL;
  }
  CHECK_GET(db, roptions, "foo", "hello");
  CHECK_GET(db, roptions, "missing", NULL);
  /* empty key and empty value; NULL with length 0 is the empty string */
  leveldb_put(db, woptions, NULL, 0, "empty-key", 9, &err);
  CHECK_NO_ERROR(err);
  CHECK_GET(db, roptions, "", "empty-key");
  leveldb_put(db, woptions, "nullvalue", 9, NULL, 0, &err);
  CHECK_NO_ERROR(err);
  {
    char* v = leveldb_get(db, roptions, "nullvalue", 9, &len, &err);
    CHECK_NO_ERROR(err);
    CHECK(v != NULL && len == 0); /* present and empty, not missing */
    leveldb_free(v);
  }
  leveldb_delete(db, woptions, NULL, 0, &err);
  CHECK_NO_ERROR(err);
  leveldb_delete(db, woptions, "nullvalue", 9, &err);
  CHECK_NO_ERROR(err);
  CHECK_GET(db, roptions, "", NULL);
  /* a NULL pointer with a length is an error, not a crash */
  leveldb_put(db, woptions, NULL, 3, "x", 1, &err);
  EXPECT_ERROR(err, "NULL");
  leveldb_put(NULL, woptions, "k", 1, "x", 1, &err);
  EXPECT_ERROR(err, "NULL");

  /* write batches */
  wb = leveldb_writebatch_create();
  leveldb_writebatch_put(wb, "foo", 3, "a", 1);
  leveldb_writebatch_clear(wb);
  leveldb_writebatch_put(wb, "bar", 3, "b", 1);
  leveldb_writebatch_put(wb, "box", 3, "c", 1);
  leveldb_writebatch_delete(wb, "bar", 3);
  wb2 = leveldb_writebatch_create();
  leveldb_writebatch_put(wb2, "qux", 3, "q", 1);
  leveldb_writebatch_delete(wb2, "qux", 3);
  leveldb_writebatch_append(wb, wb2);
  leveldb_writebatch_destroy(wb2);
  memset(&blog, 0, sizeof(blog));
  leveldb_writebatch_iterate(wb, &blog, log_put, log_delete);
  CHECK(strcmp(blog.text, "put(bar,b);put(box,c);del(bar);put(qux,q);del(qux);") == 0);
  leveldb_write(db, woptions, wb, &err);
  CHECK_NO_ERROR(err);
  leveldb_writebatch_destroy(wb);
  CHECK_GET(db, roptions, "foo", "hello");
  CHECK_GET(db, roptions, "bar", NULL);
  CHECK_GET(db, roptions, "box", "c");
  CHECK_GET(db, roptions, "qux", NULL);

  /* iterators */
  iter = leveldb_create_iterator(db, roptions);
  CHECK(!leveldb_iter_valid(iter));
  CHECK(leveldb_iter_key(iter, &len) == NULL && len == 0);
  leveldb_iter_seek_to_first(iter);
  CHECK_ITER(iter, "box", "c");
  leveldb_iter_next(iter);
  CHECK_ITER(iter, "foo", "hello");
  leveldb_iter_prev(iter);
  CHECK_ITER(iter, "box", "c");
  leveldb_iter_prev(iter);
  CHECK(!leveldb_iter_valid(iter));
  leveldb_iter_seek_to_last(iter);
  CHECK_ITER(iter, "foo", "hello");
  leveldb_iter_next(iter);
  CHECK(!leveldb_iter_valid(iter));
  CHECK(leveldb_iter_value(iter, &len) == NULL && len == 0);
  leveldb_iter_seek(iter, "b", 1);
  CHECK_ITER(iter, "box", "c");
  leveldb_iter_get_error(iter, &err);
  CHECK_NO_ERROR(err);
  leveldb_iter_destroy(iter);

  /* snapshots */
  snap = leveldb_create_snapshot(db);
  CHECK(snap != NULL);
  leveldb_delete(db, woptions, "foo", 3, &err);
  CHECK_NO_ERROR(err);
  leveldb_readoptions_set_snapshot(roptions, snap);
  CHECK_GET(db, roptions, "foo", "hello");
  iter = leveldb_create_iterator(db, roptions);
  leveldb_iter_seek_to_last(iter);
  CHECK_ITER(iter, "foo", "hello");
  leveldb_iter_destroy(iter);
  leveldb_readoptions_set_snapshot(roptions, NULL);
  CHECK_GET(db, roptions, "foo", NULL);
  leveldb_release_snapshot(db, snap);

  /* many keys: several segments (64 KiB write buffer) */
  for (i = 0; i < 3000; i++) {
    char key[32], val[64];
    snprintf(key, sizeof(key), "k%08d", i);
    snprintf(val, sizeof(val), "value number %d of the many", i);
    leveldb_put(db, woptions, key, strlen(key), val, strlen(val), &err);
    CHECK_NO_ERROR(err);
  }
  pith_flush(db, &err);
  CHECK_NO_ERROR(err);

  /* properties */
  prop = leveldb_property_value(db, "nosuchprop");
  CHECK(prop == NULL);
  prop = leveldb_property_value(db, "leveldb.stats");
  CHECK(prop != NULL && strstr(prop, "segments:") != NULL);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "leveldb.num-files-at-level0");
  CHECK(prop != NULL && atoi(prop) >= 1);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "leveldb.num-files-at-level3");
  CHECK(prop != NULL && strcmp(prop, "0") == 0);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "leveldb.sstables");
  CHECK(prop != NULL && strstr(prop, ".seg") != NULL);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "leveldb.approximate-memory-usage");
  CHECK(prop != NULL && atoll(prop) > 0);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "pith.options");
  CHECK(prop != NULL && strstr(prop, "block_size: 1024") != NULL);
  CHECK(strstr(prop, "paranoid_checks: true") != NULL);
  CHECK(strstr(prop, "cache: 1048576 (PithDB value_cache_bytes: 1048576") != NULL);
  leveldb_free(prop);
  prop = leveldb_property_value(db, "pith.stats");
  CHECK(prop != NULL && prop[0] == '{' && strstr(prop, "\"segments\"") != NULL);
  leveldb_free(prop);
  prop = pith_stats(db, &err);
  CHECK_NO_ERROR(err);
  CHECK(prop != NULL && strstr(prop, "\"disk_bytes\"") != NULL);
  leveldb_free(prop);

  /* approximate sizes */
  {
    const char* starts[3] = {"a", "k00001500", "z"};
    size_t start_lens[3] = {1, 9, 1};
    const char* limits[3] = {"k00001500", "z", "a"};
    size_t limit_lens[3] = {9, 1, 1};
    uint64_t sizes[3] = {0, 0, 99};
    leveldb_approximate_sizes(db, 3, starts, start_lens, limits, limit_lens,
                              sizes);
    CHECK(sizes[0] > 0);
    CHECK(sizes[1] > 0);
    CHECK(sizes[2] == 0); /* reversed range */
  }

  /* regex search */
  memset(&slog, 0, sizeof(slog));
  CHECK(pith_search(db, roptions, "k0000[0-9]*7", 0, 1, &slog, on_match, &err) == 300);
  CHECK_NO_ERROR(err);
  CHECK(slog.matches == 300 && slog.with_values == 300);
  CHECK(strcmp(slog.last_key, "k00002997") == 0);
  memset(&slog, 0, sizeof(slog));
  CHECK(pith_search(db, NULL, "k.*", 10, 0, &slog, on_match, &err) == 10);
  CHECK_NO_ERROR(err);
  CHECK(slog.with_values == 0);
  memset(&slog, 0, sizeof(slog));
  slog.stop_after = 3;
  CHECK(pith_search(db, NULL, "k.*", 0, 1, &slog, on_match, &err) == 3);
  CHECK_NO_ERROR(err);
  CHECK(pith_search(db, NULL, "k(", 0, 1, &slog, on_match, &err) == 0);
  EXPECT_ERROR(err, "regex");

  /* bulk load */
  {
    const char* keys[3] = {"bulk1", "bulk2", "bulk1"};
    size_t klens[3] = {5, 5, 5};
    const char* vals[3] = {"one", "two", "uno"};
    size_t vlens[3] = {3, 3, 3};
    CHECK(pith_bulk_load(db, 3, keys, klens, vals, vlens, &err) >= 2);
    CHECK_NO_ERROR(err);
    CHECK_GET(db, roptions, "bulk1", "uno");
    CHECK_GET(db, roptions, "bulk2", "two");
  }

  /* compaction, verify */
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  leveldb_compact_range(db, "a", 1, "z", 1);
  prop = leveldb_property_value(db, "leveldb.num-files-at-level0");
  CHECK(prop != NULL && strcmp(prop, "1") == 0);
  leveldb_free(prop);
  CHECK_GET(db, roptions, "k00001234", "value number 1234 of the many");
  prop = pith_verify(db, &err);
  CHECK_NO_ERROR(err);
  CHECK(prop != NULL && strstr(prop, "verified") != NULL);
  leveldb_free(prop);

  /* one handle shared by threads */
  {
    pthread_t threads[4];
    struct worker workers[4];
    for (i = 0; i < 4; i++) {
      workers[i].db = db;
      workers[i].id = i;
      workers[i].failures = 0;
      CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
    }
    for (i = 0; i < 4; i++) {
      CHECK(pthread_join(threads[i], NULL) == 0);
      CHECK(workers[i].failures == 0);
    }
    CHECK_GET(db, roptions, "t3-00299", "v3-299");
  }

  /* destroy refuses an open database */
  leveldb_destroy_db(options, dbname, &err);
  EXPECT_ERROR(err, "locked");

  /* repair, then reopen (paranoid checks verify at open) */
  leveldb_close(db);
  leveldb_options_set_create_if_missing(options, 0);
  leveldb_options_set_error_if_exists(options, 0);
  leveldb_repair_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  CHECK_GET(db, roptions, "foo", NULL);
  CHECK_GET(db, roptions, "box", "c");
  CHECK_GET(db, roptions, "k00002999", "value number 2999 of the many");
  /* an iterator and a snapshot outlive the handle */
  iter = leveldb_create_iterator(db, roptions);
  snap = leveldb_create_snapshot(db);
  leveldb_close(db);
  leveldb_iter_seek(iter, "box", 3);
  CHECK_ITER(iter, "box", "c");
  leveldb_iter_destroy(iter);
  leveldb_release_snapshot(NULL, snap);
  leveldb_repair_db(options, dbname2, &err); /* no database there */
  EXPECT_ERROR(err, "no database");

  /* comparators: one that agrees with byte order is called and accepted */
  cmp = leveldb_comparator_create(NULL, count_destructor, bytewise_compare,
                                  bytewise_name);
  leveldb_options_set_comparator(options, cmp);
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname2, &err);
  CHECK_NO_ERROR(err);
  CHECK(compare_calls > 0);
  wb = leveldb_writebatch_create();
  leveldb_writebatch_put(wb, "b", 1, "2", 1);
  leveldb_writebatch_put(wb, "a", 1, "1", 1);
  leveldb_writebatch_put(wb, "c", 1, "3", 1);
  leveldb_write(db, woptions, wb, &err);
  CHECK_NO_ERROR(err);
  leveldb_writebatch_destroy(wb);
  iter = leveldb_create_iterator(db, roptions);
  leveldb_iter_seek_to_first(iter);
  CHECK_ITER(iter, "a", "1");
  leveldb_iter_next(iter);
  leveldb_iter_next(iter);
  CHECK_ITER(iter, "c", "3");
  leveldb_iter_get_error(iter, &err);
  CHECK_NO_ERROR(err);
  leveldb_iter_destroy(iter);
  prop = leveldb_property_value(db, "pith.options");
  CHECK(prop != NULL && strstr(prop, "test.bytewise") != NULL);
  leveldb_free(prop);
  leveldb_close(db);

  /* ... and one that disagrees is detected and reported */
  bad_cmp = leveldb_comparator_create(NULL, count_destructor, reverse_compare,
                                      reverse_name);
  leveldb_options_set_comparator(options, bad_cmp);
  db = leveldb_open(options, dbname2, &err);
  CHECK(db == NULL);
  EXPECT_ERROR(err, "test.reverse");
  leveldb_options_set_comparator(options, NULL);
  leveldb_comparator_destroy(cmp);
  leveldb_comparator_destroy(bad_cmp);
  CHECK(destructor_calls == 2);

  /* a comparator that disagrees only on some keys: open's probe passes,
   * then the write, the iterator and the search that meet those keys
   * report it */
  cmp = leveldb_comparator_create(NULL, count_destructor, sneaky_compare,
                                  sneaky_name);
  leveldb_options_set_comparator(options, cmp);
  db = leveldb_open(options, dbname2, &err);
  CHECK_NO_ERROR(err);
  wb = leveldb_writebatch_create();
  leveldb_writebatch_put(wb, "zz1", 3, "1", 1);
  leveldb_writebatch_put(wb, "zz2", 3, "2", 1);
  leveldb_write(db, woptions, wb, &err);
  EXPECT_ERROR(err, "test.sneaky");
  leveldb_writebatch_destroy(wb);
  CHECK_GET(db, roptions, "zz1", NULL); /* the refused batch wrote nothing */
  leveldb_put(db, woptions, "zz1", 3, "1", 1, &err); /* one key: nothing to compare */
  CHECK_NO_ERROR(err);
  leveldb_put(db, woptions, "zz2", 3, "2", 1, &err);
  CHECK_NO_ERROR(err);
  iter = leveldb_create_iterator(db, roptions);
  leveldb_iter_seek(iter, "zz", 2);
  CHECK_ITER(iter, "zz1", "1");
  leveldb_iter_next(iter);
  CHECK(!leveldb_iter_valid(iter));
  leveldb_iter_get_error(iter, &err);
  EXPECT_ERROR(err, "test.sneaky");
  leveldb_iter_destroy(iter);
  memset(&slog, 0, sizeof(slog));
  pith_search(db, NULL, "zz.*", 0, 0, &slog, on_match, &err);
  EXPECT_ERROR(err, "test.sneaky");
  leveldb_close(db);
  leveldb_options_set_comparator(options, NULL);
  leveldb_comparator_destroy(cmp);
  CHECK(destructor_calls == 3);

  /* filter policies: accepted; a custom one never changes results */
  bloom = leveldb_filterpolicy_create_bloom(10);
  custom_policy = leveldb_filterpolicy_create(NULL, count_destructor,
                                              never_create_filter,
                                              never_match, filter_name);
  leveldb_options_set_filter_policy(options, custom_policy);
  db = leveldb_open(options, dbname3, &err);
  CHECK_NO_ERROR(err);
  leveldb_put(db, woptions, "foo", 3, "foovalue", 8, &err);
  CHECK_NO_ERROR(err);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  CHECK_GET(db, roptions, "foo", "foovalue");
  prop = leveldb_property_value(db, "pith.options");
  CHECK(prop != NULL && strstr(prop, "test.nomatch") != NULL);
  leveldb_free(prop);
  leveldb_close(db);
  leveldb_options_set_filter_policy(options, bloom);
  db = leveldb_open(options, dbname3, &err);
  CHECK_NO_ERROR(err);
  CHECK_GET(db, roptions, "foo", "foovalue");
  prop = leveldb_property_value(db, "pith.options");
  CHECK(prop != NULL && strstr(prop, "bloom 10 bits") != NULL);
  leveldb_free(prop);
  leveldb_close(db);
  leveldb_options_set_filter_policy(options, NULL);
  leveldb_filterpolicy_destroy(custom_policy);
  leveldb_filterpolicy_destroy(bloom);
  CHECK(destructor_calls == 4);

  /* repair reports a damaged segment, naming it */
  CHECK(corrupt_a_segment(dbname3));
  leveldb_repair_db(options, dbname3, &err);
  EXPECT_ERROR(err, "Corruption");

  /* destroy */
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  CHECK(!dir_exists(dbname));
  leveldb_destroy_db(options, dbname2, &err);
  CHECK_NO_ERROR(err);
  leveldb_destroy_db(options, dbname3, &err);
  CHECK_NO_ERROR(err);
  CHECK(!dir_exists(dbname3));

  /* leveldb_free takes NULL */
  leveldb_free(NULL);

#ifdef PITH_LEAK_PROBE
  /* Deliberately leaks a string the library returned: tests/c_api.rs
   * builds this variant to check that AddressSanitizer reports it. */
  prop = leveldb_env_get_test_directory(env);
  printf("leak probe: %s\n", prop);
  prop = NULL;
#endif

  leveldb_options_destroy(options);
  leveldb_readoptions_destroy(roptions);
  leveldb_writeoptions_destroy(woptions);
  leveldb_cache_destroy(cache);
  leveldb_env_destroy(env);

  printf("c_api_test: %d checks passed\n", checks);
  return 0;
}
