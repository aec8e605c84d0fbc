module leaklab.dev/bulkabort-load

go 1.24
