/* leveldb/c.h: LevelDB's C API, served by PithDB.
 *
 * Programs written for LevelDB include this name; it declares the same
 * functions with the same signatures (see pith/c.h for what each means on
 * PithDB, and for PithDB's own pith_ additions). Link with -lpith, or
 * with -lleveldb after the install step that provides libpith under that
 * name (scripts/install-c.sh). */

#ifndef STORAGE_LEVELDB_INCLUDE_C_H_
#define STORAGE_LEVELDB_INCLUDE_C_H_

#include "../pith/c.h"

#endif /* STORAGE_LEVELDB_INCLUDE_C_H_ */
