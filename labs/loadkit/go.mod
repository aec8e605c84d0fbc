module leaklab.dev/loadkit

go 1.24
