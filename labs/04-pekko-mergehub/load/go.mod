module leaklab.dev/mergehub-load

go 1.24

require github.com/coder/websocket v1.8.14
