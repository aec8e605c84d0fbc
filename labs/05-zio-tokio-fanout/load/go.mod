module leaklab.dev/fanout-load

go 1.24
