module pithdb.test/levigo-acceptance

go 1.18

require github.com/jmhodges/levigo v1.0.0
