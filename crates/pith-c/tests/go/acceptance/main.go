// Command acceptance is a small program written against LevelDB through
// levigo (github.com/jmhodges/levigo, a cgo wrapper of LevelDB's C API,
// linked with -lleveldb), built unchanged against libpith installed as
// libleveldb.so. It exercises the calls a LevelDB user makes and exits
// non-zero on the first wrong answer.
//
// Usage: acceptance DIR
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/jmhodges/levigo"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "acceptance: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: acceptance DIR")
	}
	dir := os.Args[1] + "/levigo-db"

	opts := levigo.NewOptions()
	defer opts.Close()
	opts.SetCreateIfMissing(true)
	cache := levigo.NewLRUCache(8 << 20)
	defer cache.Close()
	opts.SetCache(cache)
	filter := levigo.NewBloomFilter(10)
	defer filter.Close()
	opts.SetFilterPolicy(filter)
	opts.SetWriteBufferSize(256 << 10)
	ro := levigo.NewReadOptions()
	defer ro.Close()
	wo := levigo.NewWriteOptions()
	defer wo.Close()

	db, err := levigo.Open(dir, opts)
	if err != nil {
		fail("open: %v", err)
	}
	const n = 5000
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("user:%06d", i))
		v := []byte(fmt.Sprintf("{\"id\": %d, \"name\": \"user %d\"}", i, i))
		if err := db.Put(wo, k, v); err != nil {
			fail("put: %v", err)
		}
	}
	wb := levigo.NewWriteBatch()
	wb.Delete([]byte("user:000000"))
	wb.Put([]byte("user:999999"), []byte("last"))
	if err := db.Write(wo, wb); err != nil {
		fail("write: %v", err)
	}
	wb.Close()

	snap := db.NewSnapshot()
	if err := db.Put(wo, []byte("user:000001"), []byte("changed")); err != nil {
		fail("put: %v", err)
	}
	sro := levigo.NewReadOptions()
	sro.SetSnapshot(snap)
	if v, _ := db.Get(sro, []byte("user:000001")); !bytes.Equal(v, []byte("{\"id\": 1, \"name\": \"user 1\"}")) {
		fail("snapshot read: %q", v)
	}
	sro.Close()
	db.ReleaseSnapshot(snap)
	if v, _ := db.Get(ro, []byte("user:000001")); string(v) != "changed" {
		fail("get after put: %q", v)
	}
	if v, _ := db.Get(ro, []byte("user:000000")); v != nil {
		fail("deleted key still there: %q", v)
	}

	// Forward and backward scans.
	it := db.NewIterator(ro)
	count := 0
	var last []byte
	for it.SeekToFirst(); it.Valid(); it.Next() {
		if last != nil && bytes.Compare(last, it.Key()) >= 0 {
			fail("keys out of order: %q then %q", last, it.Key())
		}
		last = it.Key()
		count++
	}
	if count != n {
		fail("forward scan saw %d keys, want %d", count, n)
	}
	back := 0
	for it.SeekToLast(); it.Valid(); it.Prev() {
		back++
	}
	if back != n {
		fail("backward scan saw %d keys, want %d", back, n)
	}
	it.Seek([]byte("user:0025"))
	if !it.Valid() || string(it.Key()) != "user:002500" {
		fail("seek landed on %q", it.Key())
	}
	if err := it.GetError(); err != nil {
		fail("iterator error: %v", err)
	}
	it.Close()

	db.CompactRange(levigo.Range{Start: nil, Limit: nil})
	sizes := db.GetApproximateSizes([]levigo.Range{{Start: []byte("user:"), Limit: []byte("user:5")}})
	if len(sizes) != 1 || sizes[0] == 0 {
		fail("approximate sizes: %v", sizes)
	}
	if db.PropertyValue("leveldb.stats") == "" {
		fail("no leveldb.stats")
	}
	// Only PithDB answers this one: proof the program runs on libpith.
	if !strings.Contains(db.PropertyValue("pith.options"), "filter_policy: bloom 10") {
		fail("pith.options missing: is this really libpith?")
	}
	db.Close()

	if err := levigo.RepairDatabase(dir, opts); err != nil {
		fail("repair: %v", err)
	}
	if err := levigo.DestroyDatabase(dir, opts); err != nil {
		fail("destroy: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		fail("the database directory survived destroy")
	}
	fmt.Printf("levigo acceptance: ok (%d keys; LevelDB C API %d.%d served by libpith)\n",
		n, levigo.GetLevelDBMajorVersion(), levigo.GetLevelDBMinorVersion())
}
