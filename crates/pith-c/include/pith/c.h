/* pith/c.h: the C interface of PithDB (libpith).
 *
 * Copyright the PithDB authors. Licensed under Apache-2.0.
 *
 * This header declares LevelDB 1.23's C API (the functions of LevelDB's
 * include/leveldb/c.h, with the same names, argument types and rules), so
 * a program written for LevelDB compiles unchanged against PithDB, plus
 * PithDB's own additions, whose names start with pith_. It is our own
 * text; "leveldb/c.h" in this distribution includes it.
 *
 * The rules every function follows
 * ---------------------------------
 * - Handles are opaque pointers. Each *_create or open has a matching
 *   *_destroy, close or release; pass every handle back exactly once.
 * - Keys and values are (pointer, length) pairs of arbitrary bytes. A
 *   NULL pointer is accepted with length 0 (the empty string).
 * - Errors: a function that can fail takes `char** errptr` last. On entry
 *   *errptr is NULL or a message an earlier call stored there. On success
 *   *errptr is not touched. On failure the old message is freed and
 *   *errptr set to a new NUL-terminated message from malloc(); free it
 *   with leveldb_free (or free). Messages say what failed and what to do.
 * - Booleans are uint8_t: 0 is false, anything else true.
 * - Strings and buffers this library returns (leveldb_get,
 *   leveldb_property_value, leveldb_env_get_test_directory, pith_stats,
 *   error messages) come from malloc(); release them with leveldb_free.
 *   Pointers from leveldb_iter_key and leveldb_iter_value belong to the
 *   iterator and stay valid until it moves or is destroyed.
 * - No function lets a failure escape as a crash: an internal error
 *   (a bug) is reported through errptr when there is one, and otherwise
 *   leaves the call without effect.
 * - Thread safety: a leveldb_t may be used from many threads at once;
 *   iterators, write batches and option objects by one thread at a time.
 *
 * Key order
 * ---------
 * PithDB orders keys bytewise (memcmp, then the shorter key first), like
 * LevelDB's default comparator; its key index (a succinct trie) is built
 * on that order and cannot take another. A comparator given with
 * leveldb_options_set_comparator is therefore not used to order keys: it
 * is CALLED to check that it agrees with byte order. leveldb_open probes
 * it on a fixed set of key pairs; leveldb_write and pith_bulk_load call
 * it on the keys of a batch (each against the next in byte order);
 * iterators call it on each step and pith_search between consecutive
 * matches. (A single leveldb_put or leveldb_delete has no second key to
 * compare.) The first disagreement is reported as an error: open fails,
 * the batch is refused whole, an iterator stops (not valid) with the error
 * from leveldb_iter_get_error. A comparator that agrees with memcmp order
 * works as in LevelDB. Its name is reported by the "pith.options"
 * property.
 *
 * What LevelDB's options mean here
 * --------------------------------
 * create_if_missing, error_if_exists  as in LevelDB (defaults: false, false).
 * paranoid_checks     when set, open reads back and checks every file
 *                     (checksums of segments, models and logs) and fails
 *                     on the first that does not verify.
 * write_buffer_size   the memtable size at which it is built into a
 *                     segment (PithDB's memtable_bytes; default 64 MiB).
 * filter_policy       leveldb_filterpolicy_create_bloom(n) sets the bits
 *                     per key of PithDB's own per-segment Bloom filters
 *                     (0 turns them off). A custom policy is accepted: its
 *                     name is read once (for "pith.options"), its filter
 *                     functions are never called, so it cannot change any
 *                     result.
 * comparator          see "Key order".
 * env                 only the default environment exists; accepted.
 * info_log            accepted (LevelDB's C API cannot create a logger).
 * cache              its capacity becomes PithDB's value cache (decoded
 *                     values of segments; default 8 MiB). Each database
 *                     opened with the cache gets a cache of that size of
 *                     its own: the cache object is not shared.
 * block_size, block_restart_interval, max_open_files, max_file_size,
 * compression
 *                     accepted and reported by the "pith.options"
 *                     property, with no effect: PithDB reads records from
 *                     mmapped, globally compressed segments, with no
 *                     blocks and no table files to cap; it always
 *                     compresses, choosing the codec itself.
 * verify_checksums, fill_cache (read options)
 *                     accepted; PithDB checks every segment section's
 *                     checksum when it opens it, and every value read
 *                     fills the value cache.
 * sync (write options) as in LevelDB: fsync the log before returning.
 * snapshot (read options) as in LevelDB.
 */

#ifndef PITH_C_H_
#define PITH_C_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifndef LEVELDB_EXPORT
#if defined(__GNUC__) || defined(__clang__)
#define LEVELDB_EXPORT __attribute__((visibility("default")))
#else
#define LEVELDB_EXPORT
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handle types (opaque) ---- */

typedef struct leveldb_t leveldb_t;                   /* an open database */
typedef struct leveldb_cache_t leveldb_cache_t;       /* sizes each database's value cache */
typedef struct leveldb_comparator_t leveldb_comparator_t;
typedef struct leveldb_env_t leveldb_env_t;           /* the environment (one default) */
typedef struct leveldb_filelock_t leveldb_filelock_t; /* declared for LevelDB compatibility; no function uses it */
typedef struct leveldb_filterpolicy_t leveldb_filterpolicy_t;
typedef struct leveldb_iterator_t leveldb_iterator_t;
typedef struct leveldb_logger_t leveldb_logger_t;     /* declared for compatibility; cannot be created */
typedef struct leveldb_options_t leveldb_options_t;
typedef struct leveldb_randomfile_t leveldb_randomfile_t;   /* declared for compatibility */
typedef struct leveldb_readoptions_t leveldb_readoptions_t;
typedef struct leveldb_seqfile_t leveldb_seqfile_t;         /* declared for compatibility */
typedef struct leveldb_snapshot_t leveldb_snapshot_t;
typedef struct leveldb_writablefile_t leveldb_writablefile_t; /* declared for compatibility */
typedef struct leveldb_writebatch_t leveldb_writebatch_t;
typedef struct leveldb_writeoptions_t leveldb_writeoptions_t;

/* ---- The database ---- */

/* Opens the database in directory `name` (created when missing if
 * create_if_missing is set). Returns NULL and sets *errptr on failure:
 * no database and create_if_missing unset, error_if_exists set and one
 * exists, the directory held by another handle or process, a comparator
 * that disagrees with byte order, a file that does not verify. */
LEVELDB_EXPORT leveldb_t* leveldb_open(const leveldb_options_t* options,
                                       const char* name, char** errptr);

/* Stops background work, syncs the log and frees the handle. Iterators
 * and snapshots taken from it stay usable until destroyed. */
LEVELDB_EXPORT void leveldb_close(leveldb_t* db);

LEVELDB_EXPORT void leveldb_put(leveldb_t* db,
                                const leveldb_writeoptions_t* options,
                                const char* key, size_t keylen,
                                const char* val, size_t vallen,
                                char** errptr);

LEVELDB_EXPORT void leveldb_delete(leveldb_t* db,
                                   const leveldb_writeoptions_t* options,
                                   const char* key, size_t keylen,
                                   char** errptr);

/* Applies every operation of `batch` atomically, in order. */
LEVELDB_EXPORT void leveldb_write(leveldb_t* db,
                                  const leveldb_writeoptions_t* options,
                                  leveldb_writebatch_t* batch, char** errptr);

/* The value of `key`: a malloc()ed buffer of *vallen bytes (not
 * NUL-terminated; free with leveldb_free). A missing key returns NULL with
 * *vallen 0 and no error. */
LEVELDB_EXPORT char* leveldb_get(leveldb_t* db,
                                 const leveldb_readoptions_t* options,
                                 const char* key, size_t keylen,
                                 size_t* vallen, char** errptr);

/* A two-way iterator over the database (at the snapshot of `options`, or
 * now). It is not positioned: seek first. */
LEVELDB_EXPORT leveldb_iterator_t* leveldb_create_iterator(
    leveldb_t* db, const leveldb_readoptions_t* options);

LEVELDB_EXPORT const leveldb_snapshot_t* leveldb_create_snapshot(leveldb_t* db);

LEVELDB_EXPORT void leveldb_release_snapshot(
    leveldb_t* db, const leveldb_snapshot_t* snapshot);

/* The value of a property as a malloc()ed NUL-terminated string, or NULL
 * when the property is unknown. Known properties:
 *   leveldb.stats                     a text table of PithDB's stats
 *   leveldb.num-files-at-level<N>     segments at level N: every segment
 *                                     is at level 0 (PithDB has no levels)
 *   leveldb.sstables                  one line per segment file
 *   leveldb.approximate-memory-usage  memtable bytes plus resident index
 *                                     bytes, in bytes
 *   pith.stats                        the stats as one JSON object (as
 *                                     pith_stats)
 *   pith.options                      how each LevelDB option given at
 *                                     open was taken, one per line */
LEVELDB_EXPORT char* leveldb_property_value(leveldb_t* db,
                                            const char* propname);

/* For each of `num_ranges` ranges [start, limit): an estimate of the
 * bytes its keys take on disk, written to sizes[i]. PithDB counts the
 * live keys in the range (a walk of the key index; no value is read) and
 * gives them their share of the database's bytes on disk (write-ahead
 * logs included, so recent writes count):
 *   disk bytes * keys in range / keys in the database.
 * An empty or reversed range is 0. */
LEVELDB_EXPORT void leveldb_approximate_sizes(
    leveldb_t* db, int num_ranges, const char* const* range_start_key,
    const size_t* range_start_key_len, const char* const* range_limit_key,
    const size_t* range_limit_key_len, uint64_t* sizes);

/* Compacts the database. PithDB merges all segments into one (dropping
 * overwritten and deleted records no snapshot needs), whatever the range:
 * the keys of [start, limit] are compacted, and so is everything else.
 * A NULL start or limit means unbounded, as in LevelDB. */
LEVELDB_EXPORT void leveldb_compact_range(leveldb_t* db, const char* start_key,
                                          size_t start_key_len,
                                          const char* limit_key,
                                          size_t limit_key_len);

/* Removes the database in `name`: every PithDB file in the directory,
 * then the directory if it is left empty. A missing directory is not an
 * error. Fails when the database is open (locked), and leaves files that
 * are not PithDB's in place. */
LEVELDB_EXPORT void leveldb_destroy_db(const leveldb_options_t* options,
                                       const char* name, char** errptr);

/* Opens the database (which drops a torn log tail left by a crash, as
 * every open does), reads back every file and checks every checksum, and
 * closes it. Succeeds when everything verifies. Otherwise fails with a
 * message naming the file and offset that does not verify: PithDB does
 * not rewrite a damaged segment in place; restore that file from a
 * backup, or copy out what reads (an iterator stops at the damage). */
LEVELDB_EXPORT void leveldb_repair_db(const leveldb_options_t* options,
                                      const char* name, char** errptr);

/* ---- Iterators ---- */

LEVELDB_EXPORT void leveldb_iter_destroy(leveldb_iterator_t*);
LEVELDB_EXPORT uint8_t leveldb_iter_valid(const leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek_to_first(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek_to_last(leveldb_iterator_t*);
/* Moves to the first key >= k. */
LEVELDB_EXPORT void leveldb_iter_seek(leveldb_iterator_t*, const char* k,
                                      size_t klen);
LEVELDB_EXPORT void leveldb_iter_next(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_prev(leveldb_iterator_t*);
/* The current key and value (NULL with length 0 when not valid); owned
 * by the iterator, valid until it moves. */
LEVELDB_EXPORT const char* leveldb_iter_key(const leveldb_iterator_t*,
                                            size_t* klen);
LEVELDB_EXPORT const char* leveldb_iter_value(const leveldb_iterator_t*,
                                              size_t* vlen);
/* Sets *errptr when the iterator stopped on an error (a value that does
 * not decode, or a comparator that disagrees with byte order). */
LEVELDB_EXPORT void leveldb_iter_get_error(const leveldb_iterator_t*,
                                           char** errptr);

/* ---- Write batches ---- */

LEVELDB_EXPORT leveldb_writebatch_t* leveldb_writebatch_create(void);
LEVELDB_EXPORT void leveldb_writebatch_destroy(leveldb_writebatch_t*);
LEVELDB_EXPORT void leveldb_writebatch_clear(leveldb_writebatch_t*);
LEVELDB_EXPORT void leveldb_writebatch_put(leveldb_writebatch_t*,
                                           const char* key, size_t klen,
                                           const char* val, size_t vlen);
LEVELDB_EXPORT void leveldb_writebatch_delete(leveldb_writebatch_t*,
                                              const char* key, size_t klen);
/* Calls put or deleted for each operation, in the order they were added. */
LEVELDB_EXPORT void leveldb_writebatch_iterate(
    const leveldb_writebatch_t*, void* state,
    void (*put)(void*, const char* k, size_t klen, const char* v, size_t vlen),
    void (*deleted)(void*, const char* k, size_t klen));
/* Adds source's operations after destination's. */
LEVELDB_EXPORT void leveldb_writebatch_append(
    leveldb_writebatch_t* destination, const leveldb_writebatch_t* source);

/* ---- Options (see "What LevelDB's options mean here" above) ---- */

LEVELDB_EXPORT leveldb_options_t* leveldb_options_create(void);
LEVELDB_EXPORT void leveldb_options_destroy(leveldb_options_t*);
/* The comparator must outlive every database opened with these options. */
LEVELDB_EXPORT void leveldb_options_set_comparator(leveldb_options_t*,
                                                   leveldb_comparator_t*);
LEVELDB_EXPORT void leveldb_options_set_filter_policy(leveldb_options_t*,
                                                      leveldb_filterpolicy_t*);
LEVELDB_EXPORT void leveldb_options_set_create_if_missing(leveldb_options_t*,
                                                          uint8_t);
LEVELDB_EXPORT void leveldb_options_set_error_if_exists(leveldb_options_t*,
                                                        uint8_t);
LEVELDB_EXPORT void leveldb_options_set_paranoid_checks(leveldb_options_t*,
                                                        uint8_t);
LEVELDB_EXPORT void leveldb_options_set_env(leveldb_options_t*, leveldb_env_t*);
LEVELDB_EXPORT void leveldb_options_set_info_log(leveldb_options_t*,
                                                 leveldb_logger_t*);
LEVELDB_EXPORT void leveldb_options_set_write_buffer_size(leveldb_options_t*,
                                                          size_t);
LEVELDB_EXPORT void leveldb_options_set_max_open_files(leveldb_options_t*, int);
LEVELDB_EXPORT void leveldb_options_set_cache(leveldb_options_t*,
                                              leveldb_cache_t*);
LEVELDB_EXPORT void leveldb_options_set_block_size(leveldb_options_t*, size_t);
LEVELDB_EXPORT void leveldb_options_set_block_restart_interval(
    leveldb_options_t*, int);
LEVELDB_EXPORT void leveldb_options_set_max_file_size(leveldb_options_t*,
                                                      size_t);

/* The values LevelDB defines for leveldb_options_set_compression. */
enum { leveldb_no_compression = 0, leveldb_snappy_compression = 1 };
LEVELDB_EXPORT void leveldb_options_set_compression(leveldb_options_t*, int);

/* ---- Comparators (checked against byte order; see "Key order") ---- */

/* `destructor(state)` runs when the comparator is destroyed. `compare`
 * returns <0, 0 or >0; `name` returns a NUL-terminated string that lives
 * as long as the comparator. */
LEVELDB_EXPORT leveldb_comparator_t* leveldb_comparator_create(
    void* state, void (*destructor)(void*),
    int (*compare)(void*, const char* a, size_t alen, const char* b,
                   size_t blen),
    const char* (*name)(void*));
LEVELDB_EXPORT void leveldb_comparator_destroy(leveldb_comparator_t*);

/* ---- Filter policies ---- */

/* A custom policy is accepted: `name` is called once, here; the filter
 * functions are never called (see the options above). `destructor(state)`
 * runs when it is destroyed. */
LEVELDB_EXPORT leveldb_filterpolicy_t* leveldb_filterpolicy_create(
    void* state, void (*destructor)(void*),
    char* (*create_filter)(void*, const char* const* key_array,
                           const size_t* key_length_array, int num_keys,
                           size_t* filter_length),
    uint8_t (*key_may_match)(void*, const char* key, size_t length,
                             const char* filter, size_t filter_length),
    const char* (*name)(void*));
LEVELDB_EXPORT void leveldb_filterpolicy_destroy(leveldb_filterpolicy_t*);
/* PithDB's own Bloom filters at `bits_per_key` (negative counts as 0). */
LEVELDB_EXPORT leveldb_filterpolicy_t* leveldb_filterpolicy_create_bloom(
    int bits_per_key);

/* ---- Read and write options ---- */

LEVELDB_EXPORT leveldb_readoptions_t* leveldb_readoptions_create(void);
LEVELDB_EXPORT void leveldb_readoptions_destroy(leveldb_readoptions_t*);
LEVELDB_EXPORT void leveldb_readoptions_set_verify_checksums(
    leveldb_readoptions_t*, uint8_t);
LEVELDB_EXPORT void leveldb_readoptions_set_fill_cache(leveldb_readoptions_t*,
                                                       uint8_t);
/* NULL reads the current state. The snapshot must stay unreleased while
 * the read options are used with it. */
LEVELDB_EXPORT void leveldb_readoptions_set_snapshot(leveldb_readoptions_t*,
                                                     const leveldb_snapshot_t*);

LEVELDB_EXPORT leveldb_writeoptions_t* leveldb_writeoptions_create(void);
LEVELDB_EXPORT void leveldb_writeoptions_destroy(leveldb_writeoptions_t*);
LEVELDB_EXPORT void leveldb_writeoptions_set_sync(leveldb_writeoptions_t*,
                                                  uint8_t);

/* ---- Cache and environment ---- */

/* Accepted for compatibility: its capacity is reported, never used. */
LEVELDB_EXPORT leveldb_cache_t* leveldb_cache_create_lru(size_t capacity);
LEVELDB_EXPORT void leveldb_cache_destroy(leveldb_cache_t* cache);

LEVELDB_EXPORT leveldb_env_t* leveldb_create_default_env(void);
LEVELDB_EXPORT void leveldb_env_destroy(leveldb_env_t*);
/* A directory for tests: $TEST_TMPDIR when set, else
 * <temp dir>/pithtest-<uid>; created if missing. malloc()ed; NULL when it
 * cannot be created. */
LEVELDB_EXPORT char* leveldb_env_get_test_directory(leveldb_env_t*);

/* ---- Utility ---- */

/* Frees a buffer or string this library returned. */
LEVELDB_EXPORT void leveldb_free(void* ptr);

/* The LevelDB C API version this library implements: 1.23. */
LEVELDB_EXPORT int leveldb_major_version(void);
LEVELDB_EXPORT int leveldb_minor_version(void);

/* ---- PithDB's additions ---- */

/* PithDB's version, a static NUL-terminated string (do not free). */
LEVELDB_EXPORT const char* pith_version(void);

/* Regex search over keys: calls on_match(state, key, klen, value, vlen)
 * for each key that matches `pattern` (a whole-key match, Rust regex
 * syntax, NUL-terminated) in key order, at the snapshot of `options`
 * (NULL: now). The regex is walked through the key index, not matched
 * against every key. With include_values 0 no value is read and the
 * callback gets NULL, 0. The pointers are valid during the callback only.
 * on_match returns nonzero to go on, 0 to stop; at most `limit` matches
 * are delivered (0: no limit). Returns the number delivered. A bad
 * pattern sets *errptr and returns 0. */
LEVELDB_EXPORT size_t pith_search(
    leveldb_t* db, const leveldb_readoptions_t* options, const char* pattern,
    size_t limit, uint8_t include_values, void* state,
    uint8_t (*on_match)(void* state, const char* k, size_t klen,
                        const char* v, size_t vlen),
    char** errptr);

/* PithDB's stats as one JSON object (segments, keys, bytes of index and
 * values on disk, compression ratio, memtable, logs): malloc()ed, free
 * with leveldb_free. NULL and *errptr set on failure. */
LEVELDB_EXPORT char* pith_stats(leveldb_t* db, char** errptr);

/* Loads `n` records straight into segments, without the write-ahead log:
 * record i is keys[i] (keylens[i] bytes) -> values[i] (valuelens[i]
 * bytes); for repeated keys the last wins. Much faster than puts for a
 * large initial load; other writers wait while it runs. Returns the
 * number of records loaded (0 and *errptr set on failure). */
LEVELDB_EXPORT uint64_t pith_bulk_load(leveldb_t* db, size_t n,
                                       const char* const* keys,
                                       const size_t* keylens,
                                       const char* const* values,
                                       const size_t* valuelens,
                                       char** errptr);

/* Reads back every file of the open database and checks every checksum.
 * Returns a malloc()ed one-line summary (free with leveldb_free), or NULL
 * with *errptr set to what does not verify. */
LEVELDB_EXPORT char* pith_verify(leveldb_t* db, char** errptr);

/* Builds the memtable into a segment and waits for it. */
LEVELDB_EXPORT void pith_flush(leveldb_t* db, char** errptr);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PITH_C_H_ */
