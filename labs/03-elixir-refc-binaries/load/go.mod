module leaklab.dev/refcbinaries-load

go 1.27

toolchain go1.27.3

require (
	github.com/coder/websocket v1.8.15
	leaklab.dev/loadkit v0.0.0
)

// The course's shared load kit, beside the labs; the harness builds the load with it
// in the same place (tools/leaklab build.py).
replace leaklab.dev/loadkit => ../../loadkit
