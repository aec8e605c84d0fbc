module leaklab.dev/refcbinaries-load

go 1.24

require github.com/coder/websocket v1.8.14 // indirect
