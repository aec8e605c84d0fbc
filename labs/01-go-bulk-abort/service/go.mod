module leaklab.dev/bulkabort

go 1.27

toolchain go1.27.3

require go.uber.org/goleak v1.3.0
